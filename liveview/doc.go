// Package liveview is a live page of what a limiter decides, for
// operators: which callers are refused, in which scope, since when, and
// whether a limit is about to bite everyone. An application mounts it, as
// it would net/http/pprof, behind its own authentication.
//
// # Model
//
// A [View] is fed by the limiter's observation hook (core.Config.Observe,
// ADR 0010): it sees every decision as it is made, and keeps
//
//   - per scope, kind of caller and outcome (allowed, refused, exempt,
//     shadow, failed open, failed closed), the number of decisions in each
//     second of the last 15 minutes ([Seconds]): a ring of counters
//     per series, counted without a lock;
//   - the callers refused most in the last 15 to 30 minutes, in memory
//     bounded by Config.Callers whatever the number of callers: a
//     Space-Saving sketch per period of 15 minutes, the current one and
//     the previous one, merged. With N refusals in the two periods and k
//     callers kept, every caller refused more than N/k times in them is
//     listed, and its count is too high by at most N/k ([Refused.Error],
//     [Snapshot.ErrorBound]).
//
// A limiter without the view's hook pays nothing for it. With it, a
// decision allocates nothing more than with any other hook (make allocs).
// The view knows only what it observed in this process: with several
// processes, each shows its own.
//
// # Mounting
//
// A View is an [http.Handler] that serves, at whatever path it is
// mounted, the page (GET), its figures as JSON (GET ?format=json, a
// [Snapshot]) and resets (POST): mount that one path, for GET and POST,
// behind the application's authentication:
//
//	view, err := liveview.New(liveview.Config{})
//	lim, err := core.New(core.Config{..., Observe: view.Observe})
//	view.AllowReset(lim) // optional: the reset buttons
//	mux.Handle("/debug/limits", requireAdmin(view))
//
// With Gin, Echo v4 and Echo v5:
//
//	r.Match([]string{"GET", "POST"}, "/debug/limits", admin, gin.WrapH(view)) // Gin
//	e.Match([]string{"GET", "POST"}, "/debug/limits", echo.WrapHandler(view), admin) // Echo v4 and v5
//
// An application that feeds metrics too gives both hooks:
// Observe: core.Observers(metrics.Observe, view.Observe).
//
// # The page
//
// The page draws each series as inline SVG and lists the callers refused
// most with their scope, refusals and first and last refusal. It
// refreshes its figures every Config.Refresh from its own URL, without a
// reload, with a small inline script; it loads nothing from anywhere
// else, and its Content-Security-Policy allows nothing else, so it works
// offline.
//
// # Reset
//
// Each listed caller has a reset button, disabled unless the application
// calls [View.AllowReset]. The button posts the scope and the caller,
// with the page's CSRF token in the header [TokenHeader], and the view
// calls core.Limiter.Reset with the scope and the very caller value the
// limiter gave it in its events: the view never builds a caller itself.
// Only callers the view lists can be reset through it.
package liveview
