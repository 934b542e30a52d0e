package checks

import (
	"context"

	"github.com/ratescope/ratescope/core"
)

// selfChecker is a store that checks its own deployment (see
// [core.StoreProblem]).
type selfChecker interface {
	CheckStore(ctx context.Context) []core.StoreProblem
}

// storeWarnings returns, as warnings, what the store finds wrong with its
// own deployment, if it can check it: for the Redis store, ratescope.W604
// to W607 (package redisstore, Store.CheckStore).
func storeWarnings(ctx context.Context, store core.Store) []Message {
	c, ok := store.(selfChecker)
	if !ok {
		return nil
	}
	var msgs []Message
	for _, w := range c.CheckStore(ctx) {
		msgs = append(msgs, Message{ID: w.ID, Level: Warning, Text: w.Text, Hint: w.Hint})
	}
	return msgs
}
