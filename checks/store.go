package checks

import (
	"context"

	"github.com/ratescope/ratescope/core"
)

// selfChecker is a store that checks its own deployment (see the package
// doc).
type selfChecker interface {
	CheckStore(ctx context.Context) []Message
}

// storeWarnings returns what the store finds wrong with its own
// deployment, if it can check it: for the Redis store, ratescope.W604 to
// W607 (package redisstore, Store.CheckStore).
func storeWarnings(ctx context.Context, store core.Store) []Message {
	c, ok := store.(selfChecker)
	if !ok {
		return nil
	}
	return c.CheckStore(ctx)
}
