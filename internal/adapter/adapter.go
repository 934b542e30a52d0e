// Package adapter is what every framework adapter (ginlimit, echolimit,
// echo5limit, httplimit) does for a request, written once over the
// framework's context type C: defaults, validation, who the caller is,
// exemption, the decision, and the give-back once the handler ran. An
// adapter translates its Config into a [Config] and answers in its
// framework's idiom.
package adapter

import (
	"errors"
	"net/http"

	"github.com/ratescope/ratescope/core"
)

// Config is an adapter's Config in terms of no framework: the fields of
// the same names, C being the framework's context.
type Config[C any] struct {
	// Package names the adapter in errors ("ginlimit").
	Package    string
	Limiter    *core.Limiter
	Scope      string
	Cost       int64
	RouteCosts map[string]int64
	Key        func(C) string
	User       func(C) string
	Plan       func(C) string
	Exempt     func(C, core.Caller) bool
	GiveBack   func(C) bool

	// For [Middleware.Serve], the flow of a framework whose handlers
	// return an error (Echo): Skip skips the request (nil: none), Keep
	// keeps its decision (nil: not kept), Deny answers a refusal, and
	// StoreError, when not nil, is told of a store failure that let the
	// request through, and refuses it by returning an error.
	Skip       func(C) bool
	Keep       func(C, *core.Decision)
	Deny       func(C, *core.Decision) error
	StoreError func(C, error) error
}

// guard is the core's Guard config of c.
func (c *Config[C]) guard() core.GuardConfig {
	return core.GuardConfig{Limiter: c.Limiter, Scope: c.Scope, Cost: c.Cost, RouteCosts: c.RouteCosts}
}

// Validate reports what [New] would fail on, naming the adapter, without
// building anything or logging.
func (c Config[C]) Validate() error {
	if c.Limiter == nil {
		return errors.New(c.Package + ": no Limiter: build one with core.New")
	}
	return c.wrap(c.guard().Validate())
}

func (c *Config[C]) wrap(err error) error {
	if err == nil {
		return nil
	}
	return &namedError{pkg: c.Package, err: err}
}

// namedError prefixes an error with the adapter's name and wraps it.
type namedError struct {
	pkg string
	err error
}

func (e *namedError) Error() string { return e.pkg + ": " + e.err.Error() }
func (e *namedError) Unwrap() error { return e.err }

// A Middleware decides the requests of one adapter's middleware. It is
// safe for concurrent use.
type Middleware[C any] struct {
	cfg   Config[C]
	guard *core.Guard
}

// New returns the Middleware of cfg, or the error of [Config.Validate].
func New[C any](cfg Config[C]) (*Middleware[C], error) {
	if cfg.Limiter == nil {
		return nil, cfg.Validate()
	}
	g, err := core.NewGuard(cfg.guard()) // validates, as Validate does
	if err != nil {
		return nil, cfg.wrap(err)
	}
	return &Middleware[C]{cfg: cfg, guard: g}, nil
}

// Check decides the request of c, r, to the route of that pattern, into t,
// and writes the limit's fields to h.
func (m *Middleware[C]) Check(c C, r *http.Request, route string, h http.Header, t *core.Ticket) {
	cfg := &m.cfg
	caller := Caller(cfg.Limiter, cfg.Key, cfg.User, c, r)
	call := core.Call{Caller: caller, Route: route, Header: h}
	if cfg.Plan != nil && caller.Kind() == core.User {
		call.Plan = cfg.Plan(c)
	}
	call.Exempt = cfg.Exempt != nil && cfg.Exempt(c, caller)
	m.guard.Check(r.Context(), t, call)
}

// GivesBack reports whether t's request may be given back once its handler
// ran: the adapter then runs the handler inside its middleware and calls
// [Middleware.Done].
func (m *Middleware[C]) GivesBack(t *core.Ticket) bool {
	return m.cfg.GiveBack != nil && t.Counted()
}

// Done gives t's request back if Config.GiveBack says so of c, after its
// handler ran. A store's error is logged by the Limiter; the units then
// stay counted.
func (m *Middleware[C]) Done(c C, r *http.Request, t *core.Ticket) {
	if m.cfg.GiveBack(c) {
		_ = t.GiveBack(r.Context())
	}
}

// Serve decides the request of c, r, to the route of that pattern, writes
// the limit's fields to h, and runs next unless the request is skipped or
// refused, giving it back afterwards if Config.GiveBack says so and next
// returned no error.
func (m *Middleware[C]) Serve(c C, r *http.Request, route string, h http.Header, next func(C) error) error {
	cfg := &m.cfg
	if cfg.Skip != nil && cfg.Skip(c) {
		return next(c)
	}
	var t core.Ticket
	m.Check(c, r, route, h, &t)
	if cfg.Keep != nil {
		cfg.Keep(c, t.Decision())
	}
	if !t.Allowed() {
		return cfg.Deny(c, t.Decision())
	}
	if err := t.StoreErr(); err != nil && cfg.StoreError != nil {
		if err := cfg.StoreError(c, err); err != nil {
			return err
		}
	}
	err := next(c)
	if err == nil && m.GivesBack(&t) {
		m.Done(c, r, &t)
	}
	return err
}

// Caller is who made the request of c, r: the caller counted by key if key
// finds one, else the signed-in user if user finds one, else the anonymous
// caller of r's address.
func Caller[C any](lim *core.Limiter, key, user func(C) string, c C, r *http.Request) core.Caller {
	var signedIn core.Caller
	if key != nil {
		if k := key(c); k != "" {
			signedIn = core.KeyCaller(k)
		}
	}
	if signedIn.Kind() == core.Anonymous && user != nil {
		signedIn = core.UserCaller(user(c))
	}
	return lim.Caller(r, signedIn)
}
