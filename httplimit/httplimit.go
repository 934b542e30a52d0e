// Package httplimit limits the requests of a net/http server, or of any
// router that serves http.Handler (chi, gorilla/mux), with the limits of a
// [core.Limiter]: the middleware of ginlimit and echolimit, for the
// standard library. It wraps each limited handler; a handler that is never
// to be limited (a health check) is not wrapped. See package core for the
// model.
package httplimit

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/adapter"
)

// Config configures the middleware built by [New]. Zero fields take the
// defaults stated on each.
type Config struct {
	// Limiter decides every request. Required.
	Limiter *core.Limiter
	// Scope is the scope the requests are counted in. Default: "api".
	Scope string
	// Cost is the number of units each request uses. Default: 1.
	Cost int64
	// RouteCosts gives routes a cost of their own, keyed by the pattern
	// the request was routed by (r.Pattern, for a handler wrapped behind
	// http.ServeMux); a route it does not name costs Cost. Default: none.
	RouteCosts map[string]int64
	// Key returns the key to count the caller by, such as an API key, or
	// "" ([core.KeyCaller]). Default: nil, no caller is counted by key.
	Key func(r *http.Request) string
	// User returns the id of the signed-in user, as an earlier middleware
	// left it in the request's context, or "" for an anonymous caller.
	// Default: nil, every caller is anonymous.
	User func(r *http.Request) string
	// Plan returns the plan of a signed-in caller ([core.Scope.Plans]).
	// Default: nil, the scope's user rates.
	Plan func(r *http.Request) string
	// Exempt reports whether the caller is exempt from the limits.
	// Default: nil, no caller is exempt (but the Limiter's allowlists).
	Exempt func(r *http.Request, caller core.Caller) bool
	// DenyHandler answers a refused request, after the headers are set;
	// the next handler does not run. Default: [DenyJSON].
	DenyHandler func(w http.ResponseWriter, r *http.Request, d *core.Decision)
	// KeepDecision keeps the decision in the request's context, where the
	// next handler reads it with [Decision]. Default: false.
	KeepDecision bool
	// ErrorHandler is called when the store failed and the request was
	// allowed uncounted (fail open); it returns false to refuse the
	// request, having answered it. Default: nil, the request is served.
	ErrorHandler func(w http.ResponseWriter, r *http.Request, err error) (serve bool)
	// GiveBack, when not nil, is called after the next handler for each
	// counted request, with the status it answered; true gives the
	// request's units back. A sign-in route that counts only failures
	// sets func(_ *http.Request, status int) bool { return status < 400 }.
	// Default: nil, every request counts.
	GiveBack func(r *http.Request, status int) bool
}

// DenyJSON is the default deny handler: the status of
// [core.Decision.Status] with the JSON body of [core.Decision.DenyBody].
func DenyJSON(w http.ResponseWriter, _ *http.Request, d *core.Decision) {
	writeJSON(w, d.Status(), "application/json; charset=utf-8", d.DenyBody())
}

// DenyProblem is a deny handler that answers with the problem details of
// [core.Decision.Problem] (RFC 9457).
func DenyProblem(w http.ResponseWriter, _ *http.Request, d *core.Decision) {
	writeJSON(w, d.Status(), core.ProblemContentType, d.Problem())
}

func writeJSON(w http.ResponseWriter, status int, contentType string, v any) {
	body, _ := json.Marshal(v) // a struct of strings and numbers
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Validate reports what [New] would fail on: no Limiter, an unknown
// scope, a cost or route cost below 1. It builds nothing and logs nothing.
func (c Config) Validate() error { return c.adapter().Validate() }

func (c *Config) adapter() adapter.Config[*http.Request] {
	return adapter.Config[*http.Request]{Package: "httplimit", Limiter: c.Limiter, Scope: c.Scope, Cost: c.Cost,
		RouteCosts: c.RouteCosts, Key: c.Key, User: c.User, Plan: c.Plan, Exempt: c.Exempt}
}

type decisionKey struct{}

// New returns the middleware of cfg, or the error of [Config.Validate]. It
// decides each request before next, sets the RateLimit fields the
// Limiter's header policy asks for, and answers a refusal with
// DenyHandler.
func New(cfg Config) (func(next http.Handler) http.Handler, error) {
	m, err := adapter.New(cfg.adapter())
	if err != nil {
		return nil, err
	}
	if cfg.DenyHandler == nil {
		cfg.DenyHandler = DenyJSON
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var t core.Ticket
			m.Check(r, r, r.Pattern, w.Header(), &t)
			if cfg.KeepDecision {
				r = r.WithContext(context.WithValue(r.Context(), decisionKey{}, t.Decision()))
			}
			if !t.Allowed() {
				cfg.DenyHandler(w, r, t.Decision())
				return
			}
			if err := t.StoreErr(); err != nil && cfg.ErrorHandler != nil && !cfg.ErrorHandler(w, r, err) {
				return
			}
			if cfg.GiveBack == nil || !t.Counted() {
				next.ServeHTTP(w, r)
				return
			}
			sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
			next.ServeHTTP(sw, r)
			if cfg.GiveBack(r, sw.status) {
				_ = t.GiveBack(r.Context()) // logged by the Limiter; the units stay counted
			}
		})
	}, nil
}

// statusWriter records the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(status int) {
	if !w.wrote {
		w.status, w.wrote = status, true
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the writer's Flush and
// deadlines.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Decision returns the decision the middleware kept in r's context
// (Config.KeepDecision), and whether there is one.
func Decision(r *http.Request) (*core.Decision, bool) {
	d, ok := r.Context().Value(decisionKey{}).(*core.Decision)
	return d, ok
}
