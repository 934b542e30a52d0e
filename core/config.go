package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Config configures a [Limiter]. Zero fields take the defaults stated on
// each; [New] applies them to a copy and never changes the Config.
type Config struct {
	// Store keeps the counts. Required: memstore for one process, the
	// Redis store when several processes serve the API.
	Store Store

	// Scopes are the known scopes with their starting values. Default:
	// [DefaultScopes], the "api" scope. Add the search-box scopes of
	// package autocomplete here when you use it.
	Scopes []Scope

	// Rates replaces starting values, keyed by SCOPE.KIND ("api.anon",
	// "api.user") with values in the form [RateTable] reads
	// ("60/min,1000/day"). A scope or kind it does not name keeps its
	// starting values; a key that names no known scope and kind is an
	// error, so a typo cannot silently remove a limit. A key
	// SCOPE.user@PLAN ("api.user@gold") sets the rates of a plan of
	// signed-in callers ([Scope.Plans], [Call.Plan]), over the
	// periods of SCOPE.user; plans are for signed-in callers only, so
	// SCOPE.anon@PLAN is an error. Its text form is [RateTable]'s.
	Rates RateTable

	// NumProxies is how many reverse proxies stand in front of the
	// application: the caller's address is the entry of X-Forwarded-For
	// that the outermost proxy wrote, the only one the caller cannot
	// choose (see the package documentation, "Callers behind proxies").
	// Default: nil, unset, which uses the peer address and makes the
	// W601 check fire; new(0) says there is no proxy. A negative number is
	// an error of [New] (E003).
	NumProxies *int

	// TrustedProxies are the networks of the reverse proxies in front of
	// the application. When set, X-Forwarded-For is read only from a peer
	// in them, and walked from the right skipping only their addresses;
	// the package documentation ("Callers behind proxies") says how it
	// combines with NumProxies.
	// Default: none, X-Forwarded-For is read as NumProxies says. Its text
	// form is comma-separated CIDRs ([Networks]).
	TrustedProxies Networks

	// Observe, when not nil, is called once with every decision, whatever
	// its outcome (allowed, denied, failed open, exempt, shadow, failed
	// closed), before the decision is acted upon: to count decisions, log
	// refusals or feed metrics (packages
	// github.com/ratescope/ratescope/prometheus and
	// github.com/ratescope/ratescope/otel), and once with every
	// reset of a caller's counts ([Limiter.Reset], [OutcomeReset]). It runs
	// on the request's goroutine and must be fast and safe for concurrent
	// use. Default: nil; then the limiter neither measures durations nor
	// allocates for it.
	Observe func(ctx context.Context, e Event)

	// IPv6Bits is the length of the IPv6 prefix anonymous callers are
	// counted by, from 1 to 128. Default: 64, the usual size of one
	// allocation, so that rotating addresses within it does not reset a
	// count.
	IPv6Bits int

	// LoadRatio is the share of a limit a caller may use before decisions
	// carry the load warning, above 0 and at most 1. Default: 0.8.
	LoadRatio float64

	// LegacyHeaders adds X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset to the IETF draft fields. Default: false.
	LegacyHeaders bool

	// Now returns the current time. The limiter reads it once per
	// decision. Default: the system clock, as time.Now reads it, but
	// cheaper: a decision reads only the monotonic clock, and the wall
	// clock is read again once a second, so that a step of the wall clock
	// is followed within a second (memstore counts on the monotonic clock
	// alone).
	Now func() time.Time

	// Logger receives store errors, at most one record per
	// ErrorLogInterval with a count of those left out. Default:
	// slog.Default().
	Logger *slog.Logger

	// ErrorLogInterval is the least time between two logged store
	// errors. Default: 10s.
	ErrorLogInterval time.Duration

	// ExemptNetworks are networks whose callers are never limited (an
	// office, a monitoring service, a partner). A caller is exempt when
	// the address of its request, as [Limiter.Caller] finds it after the
	// proxy rules (NumProxies, TrustedProxies), is in one of them,
	// whether the caller is anonymous, signed in or counted by key: "never
	// limit our office" means everybody in the office (ADR 0008). An
	// exempt request is served, not counted, has no RateLimit headers,
	// and is observed with Outcome [OutcomeExempt], in window and balance
	// scopes alike. An anonymous [Caller] made without Limiter.Caller is
	// exempt when its counted network lies in one of them. Its text form
	// is comma-separated CIDRs ([Networks]). Default: none.
	ExemptNetworks Networks

	// ExemptUsers are user ids that are never limited, matched against
	// the id [Limiter.Caller] is given (a key of [KeyCaller] is never a
	// user id), exempt as ExemptNetworks says. An id is not empty and
	// does not start with a NUL byte. Default: none.
	ExemptUsers []string

	// Processes is how many processes share the store, for the scopes
	// that fail local ([FailLocal]): while the store is down, each
	// process gives a caller its limits divided by Processes, rounded
	// down, so that together they give about the limits once. A fail-local
	// scope whose smallest limit is below Processes is an error of [New]
	// (E003). Default: 1, each process gives the whole limits.
	Processes int

	// Headers says which responses carry the rate-limit fields:
	// [HeadersAll] (every response), [HeadersRefused] (refusals only) or
	// [HeadersNone]; a 429 carries Retry-After whatever it says. It holds
	// for window and balance limits alike. A value that is no policy is an
	// error of [New] (E003). Its text form is "all", "refused" or "none"
	// ([HeaderMode]). Default: HeadersAll.
	Headers HeaderMode
}

// Validate reports every problem with c, joined: a missing store, an invalid
// scope name, rate or rate key, an out-of-range setting, an invalid trusted
// network. Each is a [*ConfigError] whose text
// starts with its id (ratescope.E001 to E005), so errors.As finds it.
func (c Config) Validate() error {
	_, err := c.resolve()
	return err
}

func (c Config) resolve() (map[string]*Scope, error) {
	var errs []error
	if c.Store == nil {
		errs = append(errs, &ConfigError{ID: idNoStore, Err: errors.New("no Store: use memstore.New for one process or the Redis store for several")})
	}
	var bad []error
	if c.NumProxies != nil && *c.NumProxies < 0 {
		bad = append(bad, fmt.Errorf("NumProxies %d: want 0 or more, or nil for unset", *c.NumProxies))
	}
	if c.IPv6Bits != 0 && (c.IPv6Bits < 1 || c.IPv6Bits > 128) {
		bad = append(bad, fmt.Errorf("IPv6Bits %d: want 1 to 128", c.IPv6Bits))
	}
	if c.LoadRatio != 0 && (c.LoadRatio < 0 || c.LoadRatio > 1) {
		bad = append(bad, fmt.Errorf("LoadRatio %v: want above 0 and at most 1", c.LoadRatio))
	}
	if c.ErrorLogInterval < 0 {
		bad = append(bad, fmt.Errorf("ErrorLogInterval %s: must not be negative", c.ErrorLogInterval))
	}
	bad = append(bad, c.Headers.validate())
	errs = append(errs, withID(idOutOfRange, errors.Join(bad...))...)
	errs = append(errs, withID(idInvalidProxies, c.TrustedProxies.validate())...)
	scopes := c.Scopes
	if scopes == nil {
		scopes = DefaultScopes()
	}
	resolved, err := resolveScopes(scopes, c.Rates)
	errs = append(errs, withID(idInvalidRate, err)...)
	errs = append(errs, c.resolveFailModes(resolved)...)
	errs = append(errs, withID(idInvalidProxies, c.ExemptNetworks.validateAs("ExemptNetworks"))...)
	errs = append(errs, withID(idOutOfRange, validateUsers(c.ExemptUsers))...)
	return resolved, errors.Join(errs...)
}
