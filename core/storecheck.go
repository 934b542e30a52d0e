package core

// A StoreProblem is a problem a [Store] finds in its own deployment at
// startup, which no request would reveal until the limits fail: a Redis
// that may evict the counts, a client whose timeouts let a decision hang.
// A store reports its problems by having the method
// CheckStore(context.Context) []StoreProblem, which package checks calls
// once at startup and reports with their ID, Text and Hint, like its own
// messages: nil when nothing is wrong, leaving out what it cannot find out,
// and returning by the time the context ends.
type StoreProblem struct {
	// ID identifies the warning, such as "ratescope.W604"; it does not
	// change between releases.
	ID string
	// Text says what is wrong, in one sentence.
	Text string
	// Hint says what to do about it.
	Hint string
}
