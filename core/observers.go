package core

import (
	"context"
	"time"
)

// Observers returns one observation hook ([Config.Observe]) that calls
// each of hooks in turn with every [Event], for an application that feeds
// several observers, such as metrics and a live view: the nil hooks are
// left out. It returns nil when every hook is nil, so that a limiter built
// with it costs nothing more than one without a hook, and the hook itself
// when only one is not nil. The hook it returns adds no allocation of its
// own to a decision.
func Observers(hooks ...func(ctx context.Context, e Event)) func(ctx context.Context, e Event) {
	var set []func(context.Context, Event)
	for _, h := range hooks {
		if h != nil {
			set = append(set, h)
		}
	}
	switch len(set) {
	case 0:
		return nil
	case 1:
		return set[0]
	}
	return func(ctx context.Context, e Event) {
		for _, h := range set {
			h(ctx, e)
		}
	}
}

// An Event is what [Config.Observe] receives for each decision: of a
// window scope of the Limiter, or of a limit kept beside it (a balance
// scope of package balance), which calls the hook itself. It receives one
// for each reset of a caller's counts too ([Limiter.Reset]), with Outcome
// [OutcomeReset]. Its fields are the same for both kinds of limit, for an
// observer that treats them alike.
type Event struct {
	// Scope is the name of the scope decided.
	Scope string
	// Caller is who the request was counted or charged against.
	Caller Caller
	// Cost is the request's cost: the units it used or would have used of
	// a window scope, or what it added to a balance.
	Cost int64
	// Outcome is what became of the request.
	Outcome Outcome
	// Duration is how long the decision took, store call included, as
	// measured by the monotonic clock (not Config.Now). It is measured only
	// when Config.Observe is set; 0 for an exempt caller, who is decided
	// without the store.
	Duration time.Duration
	// Decision is the decision made in a window scope, or nil for another
	// kind of limit: a copy of the caller's, made for the hook. Read it
	// during the call; never change or keep it.
	Decision *Decision
}
