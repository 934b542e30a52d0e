package core

import "context"

// A StoreProblem is a problem a [Store] finds in its own deployment at
// startup, which no request would reveal until the limits fail: a Redis
// that may evict the counts, a client whose timeouts let a decision hang.
// Package checks reports it with its ID, Text and Hint, like its own
// messages.
type StoreProblem struct {
	// ID identifies the warning, such as "ratescope.W604"; it does not
	// change between releases.
	ID string
	// Text says what is wrong, in one sentence.
	Text string
	// Hint says what to do about it.
	Hint string
}

// A StoreChecker is a [Store] that can check its own deployment. It is
// optional: package checks calls CheckStore once at startup for a store that
// has it. CheckStore returns nil when it finds nothing wrong, and leaves out
// what it cannot find out (a server that refuses to show its settings); it
// returns by the time ctx ends.
type StoreChecker interface {
	CheckStore(ctx context.Context) []StoreProblem
}
