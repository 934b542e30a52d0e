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

	// For [Middleware.Serve]: Skip skips the request (nil: none), Keep
	// keeps its decision (nil: not kept), Deny answers a refusal, and
	// StoreError, when not nil, is told of a store failure that let the
	// request through, and refuses it by returning an error (Gin: by
	// aborting the context, after which next runs no handler).
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
// and writes the limit's fields to h. The caller is the one counted by
// Config.Key if it finds a key, else the signed-in user if Config.User
// finds one, else the anonymous caller of r's address; its plan is read
// only for a signed-in caller.
func (m *Middleware[C]) Check(c C, r *http.Request, route string, h http.Header, t *core.Ticket) {
	cfg := &m.cfg
	var signedIn core.Caller
	if cfg.Key != nil {
		if k := cfg.Key(c); k != "" {
			signedIn = core.KeyCaller(k)
		}
	}
	if signedIn.Kind() == core.Anonymous && cfg.User != nil {
		signedIn = core.UserCaller(cfg.User(c))
	}
	call := core.Call{Caller: cfg.Limiter.Caller(r, signedIn), Route: route, Header: h}
	if cfg.Plan != nil && call.Caller.Kind() == core.User {
		call.Plan = cfg.Plan(c)
	}
	call.Exempt = cfg.Exempt != nil && cfg.Exempt(c, call.Caller)
	m.guard.Check(r.Context(), t, call)
}

// Serve decides the request of c, r, to the route of that pattern, writes
// the limit's fields to h, and runs next unless the request is skipped or
// refused, giving it back afterwards if Config.GiveBack says so and next
// returned no error. A store's error in the give-back is logged by the
// Limiter; the units then stay counted.
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
	if err == nil && cfg.GiveBack != nil && t.Counted() && cfg.GiveBack(c) {
		_ = t.GiveBack(r.Context())
	}
	return err
}
