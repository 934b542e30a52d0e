// Package storecall lets tests ask a [core.Store] for one decision, give-back
// or reset at a time, binding it to the request's scope, kind and limits as
// a [core.Limiter] does once, and build stores whose counters are
// functions.
package storecall

import (
	"context"
	"time"

	"github.com/ratescope/ratescope/core"
)

// A Request is one call of a test on a store.
type Request struct {
	Scope  string
	Caller core.Caller
	Limits []core.Rate
	Cost   int64
	Now    time.Time
}

// Bind binds s to the scope, the caller's kind and the limits of req.
func Bind(s core.Store, req Request) (core.Counter, error) {
	return s.Bind(req.Scope, req.Caller.Kind(), req.Limits)
}

// Take binds s for req and takes req.Cost at req.Now.
func Take(ctx context.Context, s core.Store, req Request) (core.Result, error) {
	c, err := Bind(s, req)
	if err != nil {
		return core.Result{}, err
	}
	return c.Take(ctx, req.Caller.Key(), req.Cost, req.Now)
}

// GiveBack binds s for req and gives req.Cost back at at.
func GiveBack(ctx context.Context, s core.Store, req Request, at int64) error {
	c, err := Bind(s, req)
	if err != nil {
		return err
	}
	return c.GiveBack(ctx, req.Caller.Key(), req.Cost, at)
}

// Reset binds s for req and resets the caller's counts at req.Now.
func Reset(ctx context.Context, s core.Store, req Request) error {
	c, err := Bind(s, req)
	if err != nil {
		return err
	}
	return c.Reset(ctx, req.Caller.Key(), req.Now)
}

// A Call is what a [Func] store's counter is asked: the binding, the
// caller's key, the cost and the time.
type Call struct {
	Scope  string
	Kind   core.Kind
	Limits []core.Rate
	Key    core.Key
	Cost   int64
	Now    time.Time
}

// Func is a store whose counters answer every Take with the function;
// their GiveBack and Reset do nothing.
type Func func(ctx context.Context, c Call) (core.Result, error)

// Bind implements [core.Store].
func (f Func) Bind(scope string, kind core.Kind, limits []core.Rate) (core.Counter, error) {
	return &funcCounter{f: f, scope: scope, kind: kind, limits: limits}, nil
}

type funcCounter struct {
	f      Func
	scope  string
	kind   core.Kind
	limits []core.Rate
}

func (c *funcCounter) Take(ctx context.Context, key core.Key, cost int64, now time.Time) (core.Result, error) {
	return c.f(ctx, Call{Scope: c.scope, Kind: c.kind, Limits: c.limits, Key: key, Cost: cost, Now: now})
}

func (c *funcCounter) GiveBack(context.Context, core.Key, int64, int64) error { return nil }

func (c *funcCounter) Reset(context.Context, core.Key, time.Time) error { return nil }

// Down returns a store whose every call fails with err.
func Down(err error) core.Store { return down{err} }

type down struct{ err error }

func (d down) Bind(string, core.Kind, []core.Rate) (core.Counter, error) { return d, nil }

func (d down) Take(context.Context, core.Key, int64, time.Time) (core.Result, error) {
	return core.Result{}, d.err
}

func (d down) GiveBack(context.Context, core.Key, int64, int64) error { return d.err }

func (d down) Reset(context.Context, core.Key, time.Time) error { return d.err }
