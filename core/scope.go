package core

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MaxLimits is the largest number of rates one kind of caller may have in one
// scope.
const MaxLimits = 4

// A Kind is a kind of caller. Each kind has limits of its own in every scope,
// and the limits of one kind never apply to the other.
type Kind uint8

const (
	// Anonymous callers are not signed in; they are counted by network
	// address.
	Anonymous Kind = iota
	// User callers are signed in (token or session); they are counted by
	// user id, whatever address they use.
	User
)

// String returns "anon" or "user", the names used in rate keys such as
// "api.anon".
func (k Kind) String() string {
	if k == User {
		return "user"
	}
	return "anon"
}

// A Scope is a named group of limits: for each kind of caller, a list of
// rates that all apply to every request in the scope, normally one over a
// minute (it stops a burst) and one over a day (it stops steady heavy use).
// The rates given here are the scope's starting values; [Config.Rates]
// replaces them kind by kind.
//
// A Name is made of lower-case letters, digits, '.', '_' and '-', and does
// not end in ".anon" or ".user".
//
// Shadow puts the scope in shadow mode: every decision is counted,
// observed and reported in the headers exactly as if the limits were
// enforced, but a caller over a limit is served (the Decision allows it,
// with [OutcomeShadow] and the RateLimit field showing what is left), and
// the refusal it would have had is logged at most once per
// Config.ErrorLogInterval. Use it to roll out a new limit and see whom it
// would refuse. Default: false, the limits are enforced.
//
// FailMode says what the scope does with a request the store could not
// decide: serve it uncounted ([FailOpen]), refuse it ([FailClosed], for a
// sign-in form or a payment) or decide it in the process's memory
// ([FailLocal]). Default: FailOpen.
//
// Plans are named sets of rates for signed-in users, chosen per request
// (see [Call.Plan]): a plan's rates replace User for the callers on
// it, counted on the same count, so that a caller changing plan keeps what
// it used. Each plan's rates have the periods of User (in any order;
// [New] puts them in User's order). A plan name is made of lower-case
// letters, digits, '_' and '-'. [Config.Rates] sets a plan with the key
// SCOPE.user@PLAN. Default: none.
type Scope struct {
	Name   string
	Anon   []Rate
	User   []Rate
	Shadow bool

	FailMode FailMode
	Plans    map[string][]Rate
}

// DefaultScopes returns the scopes a [Config] with no Scopes uses: "api",
// with 60/min and 1000/day for anonymous callers and 600/min and 20000/day
// for signed-in users.
func DefaultScopes() []Scope {
	return []Scope{{
		Name: DefaultScope,
		Anon: []Rate{PerMinute(60), PerDay(1000)},
		User: []Rate{PerMinute(600), PerDay(20000)},
	}}
}

func validScopeName(name string) bool {
	return name != "" && !strings.HasSuffix(name, ".anon") && !strings.HasSuffix(name, ".user") && nameChars(name, ".")
}

// nameChars reports whether name is made of lower-case letters, digits,
// '_', '-' and the bytes of extra only: the characters of scope names
// (extra "."), and of plan names (extra "").
func nameChars(name, extra string) bool {
	for _, c := range []byte(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_', c == '-', strings.IndexByte(extra, c) >= 0:
		default:
			return false
		}
	}
	return true
}

// resolveScopes applies the rates dictionary to the scopes and reports every
// problem: an invalid scope name, an invalid rate, a key that names no known
// scope or kind.
func resolveScopes(scopes []Scope, rates map[string]string) (map[string]*Scope, error) {
	var errs []error
	out := make(map[string]*Scope, len(scopes))
	for _, s := range scopes {
		if !validScopeName(s.Name) {
			errs = append(errs, scopeErr("scope name %q: use lower-case letters, digits, '.', '_' and '-', not ending in .anon or .user", s.Name))
			continue
		}
		if _, dup := out[s.Name]; dup {
			errs = append(errs, scopeErr("scope %q is defined twice", s.Name))
			continue
		}
		c := s.clone()
		out[s.Name] = &c
	}
	keys := make([]string, 0, len(rates))
	for k := range rates {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		if strings.Contains(key, "@") {
			continue // plans, once the base rates are known: resolvePlans
		}
		name, kind, ok := splitRateKey(key)
		s := out[name]
		if !ok || s == nil {
			errs = append(errs, rateErr("rate key %q names no known scope and kind: want SCOPE.anon or SCOPE.user with SCOPE one of %s", key, strings.Join(sortedNames(out), ", ")))
			continue
		}
		rs, err := parseRates(rates[key])
		if err != nil {
			errs = append(errs, rateErr("rate key %q: %w", key, err))
			continue
		}
		if kind == User {
			s.User = rs
		} else {
			s.Anon = rs
		}
	}
	for _, name := range sortedNames(out) {
		s := out[name]
		if err := validateRates(s.Anon); err != nil {
			errs = append(errs, rateErr("%s.anon: %w", name, err))
		}
		if err := validateRates(s.User); err != nil {
			errs = append(errs, rateErr("%s.user: %w", name, err))
		}
	}
	errs = append(errs, resolvePlans(out, keys, rates)...)
	return out, errors.Join(errs...)
}

func scopeErr(format string, args ...any) error {
	return &ConfigError{ID: idInvalidScope, Err: fmt.Errorf(format, args...)}
}

func rateErr(format string, args ...any) error {
	return &ConfigError{ID: idInvalidRate, Err: fmt.Errorf(format, args...)}
}

// clone returns a copy of s that shares no memory with it.
func (s Scope) clone() Scope {
	s.Anon, s.User = slices.Clone(s.Anon), slices.Clone(s.User)
	if s.Plans != nil {
		plans := make(map[string][]Rate, len(s.Plans))
		for name, rates := range s.Plans {
			plans[name] = slices.Clone(rates)
		}
		s.Plans = plans
	}
	return s
}

func splitRateKey(key string) (scope string, kind Kind, ok bool) {
	i := strings.LastIndexByte(key, '.')
	if i < 0 {
		return "", 0, false
	}
	switch key[i+1:] {
	case "anon":
		return key[:i], Anonymous, true
	case "user":
		return key[:i], User, true
	}
	return "", 0, false
}

func sortedNames(m map[string]*Scope) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
