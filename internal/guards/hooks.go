package guards

import (
	"net/http"

	"github.com/ratescope/ratescope/core"
)

// Hooks are a middleware's functions of its framework's request context C
// (*gin.Context, echo.Context, *echo.Context) that find who made a request
// and what applies to it, with the Limiter that counts it. Every adapter
// reads a request through them in the same way.
type Hooks[C any] struct {
	Limiter *core.Limiter
	// Key, User and Plan read the caller's key, signed-in user and plan;
	// nil reads none.
	Key, User, Plan func(C) string
	// Exempt reports whether the caller is exempt; nil exempts none.
	Exempt func(C, core.Caller) bool
}

// Caller returns who made the request r of c, as [core.Limiter.Caller]
// finds it from the key and the user id that Key and User read: the user
// is not read for a caller with a key.
func (h *Hooks[C]) Caller(c C, r *http.Request) core.Caller {
	key, user := h.ids(c)
	return h.Limiter.Caller(r, signedIn(key, user))
}

// ids returns the key and the user id of the caller of c, for
// core.Limiter.Caller: the user is not read for a caller with a key.
func (h *Hooks[C]) ids(c C) (key, user string) {
	if h.Key != nil {
		key = h.Key(c)
	}
	if key == "" && h.User != nil {
		user = h.User(c)
	}
	return key, user
}

// Call returns what [core.Guard.Check] decides for the request r of c,
// made to route, whose response has header: its caller, its plan (read
// for a signed-in caller only) and whether it is exempt.
func (h *Hooks[C]) Call(c C, r *http.Request, route string, header http.Header) core.Call {
	key, user := h.ids(c)
	caller := h.Limiter.Caller(r, signedIn(key, user))
	var plan string
	if h.Plan != nil && caller.Kind() == core.User {
		plan = h.Plan(c)
	}
	return core.Call{Caller: caller, Route: route, Plan: plan, Exempt: h.IsExempt(c, caller), Header: header}
}

// IsExempt reports whether Exempt exempts caller, the caller of c.
func (h *Hooks[C]) IsExempt(c C, caller core.Caller) bool {
	return h.Exempt != nil && h.Exempt(c, caller)
}

// signedIn is the caller of key, if not empty, else of user.
func signedIn(key, user string) core.Caller {
	if key != "" {
		return core.KeyCaller(key)
	}
	return core.UserCaller(user)
}
