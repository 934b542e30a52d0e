package core

import "context"

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
