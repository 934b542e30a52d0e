// Package liveview is a live page of what a limiter decides, for
// operators: which callers are refused, in which scope, since when, and
// whether a limit is about to bite everyone, with a button to unblock a
// caller. Use it to see the limits at work without a metrics server; mount
// it, as you would net/http/pprof, behind your own authentication.
//
// # Model
//
// A [View] is one more observer of the limiter's decisions
// ([core.Config.Observe]; see [core] for the model). It keeps, per scope,
// kind of caller and outcome, the decisions in each second of the last 15
// minutes, and the callers refused most in the last 15 to 30 minutes, in
// memory bounded by [Config.Callers] whatever the number of callers. That
// list is a Space-Saving summary: with N refusals and k callers kept, every
// caller refused more than N/k times is listed, and its count is too high
// by at most N/k (each row's own bound is shown beside its count). Each
// listed caller names the limit that refused it last and until when.
// A limiter without the view pays nothing for it, and a decision the view
// observes allocates nothing more than with any other hook. The view knows
// only this process: with several processes, each shows its own.
//
// # Mounting
//
// A View is an [http.Handler] that serves, at the one path it is mounted
// at, the page (GET), its figures as JSON for scripts (GET ?format=json;
// see [View.ServeHTTP]) and resets (POST):
//
//	view, err := liveview.New(liveview.Config{})
//	lim, err := core.New(core.Config{..., Observe: view.Observe})
//	view.AllowReset(lim) // optional: the reset buttons
//	mux.Handle("/debug/limits", requireAdmin(view))
//
// With Gin, mount gin.WrapH(view) for GET and POST; with Echo,
// echo.WrapHandler(view). An application that feeds metrics too gives both
// hooks: Observe: core.Observers(metrics.Observe, view.Observe).
//
// The page draws its charts as inline SVG, refreshes its figures every
// [Config.Refresh] from its own URL, and loads nothing from anywhere else.
//
// # Reset
//
// Each listed caller has a reset button, disabled unless the application
// calls [View.AllowReset]. The button posts the scope and the caller, with
// the page's CSRF token in the header X-CSRF-Token, and the view resets
// the very caller value the limiter gave it in its events. Only callers the
// view lists can be reset through it.
package liveview
