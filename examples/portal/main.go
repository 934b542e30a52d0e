// Command portal is an example API limited by ratescope, on Gin, Echo v4
// or Echo v5. It is a module of its own (ADR 0017); from the root of the
// repository:
//
//	go -C examples/portal run . [-addr 127.0.0.1:8080] [-framework gin|echo|echo5]
//		[-redis URL] [-num-proxies N] [-trusted-proxies CIDR[,CIDR...]]
//		[-rates SPEC] [-admins NAMES] [-shadow] [-metrics prometheus|otel] [-export-cost N]
//		[-warn N] [-drop N] [-admin-token TOKEN]
//		[-exempt-networks CIDR[,CIDR...]] [-fail-closed SCOPE[,SCOPE...]] [-fail-local SCOPE[,SCOPE...]]
//		[-plan-users PLAN=NAME[,NAME...][;PLAN=...]] [-headers all|refused|none]
//
// Routes:
//
//	GET /                     not limited: a page with the nine search boxes; its
//	                          script (inline, loading nothing) asks
//	                          /autocomplete/NAME?q= as the user types, and on 429
//	                          shows the wait of Retry-After, sends nothing until
//	                          it has passed, then searches again
//	GET /api/records          limited in scope "api": 200 {"records": [...]}, or 429
//	GET /api/export           limited in scope "api" at cost 5 (-export-cost),
//	                          in the same group and decision: 200 {"records": [...]}, or 429
//	GET /api/whoami           not limited: {"kind": "anon"|"user", "id": "..."}
//	POST /api/login           body {"user":"NAME","password":"PASSWORD"}, limited in
//	                          scope "login" (not "api": it is outside the /api group),
//	                          counted by address only: 200 {"user":"NAME"} when the
//	                          password is "pw-" and the name (a demonstration),
//	                          401 {"error":"invalid credentials"} when not, 400 for
//	                          a malformed body; a 2xx answer is given back, so only
//	                          failures count; over the limit 429 with Retry-After,
//	                          before the password is checked
//	GET /autocomplete/NAME?q= limited in scope "autocomplete.NAME":
//	                          200 {"results": [{"id": ..., "label": ...}]},
//	                          or 429 {"results": []} without searching
//	GET /debug/searches       not limited: {"NAME": searches run, ...}
//	GET /healthz              not limited: 200
//	GET /metrics              with -metrics prometheus (or -metrics alone), not
//	                          limited: the Prometheus text format,
//	                          ratescope_decisions_total{scope, kind, outcome} with
//	                          outcome allowed, denied, failed_open, exempt, shadow,
//	                          failed_closed, or reset (a caller's counts cleared);
//	                          with -metrics otel: what the otel module records into
//	                          an OpenTelemetry SDK (ratescope.decisions and the rest),
//	                          collected by its ManualReader, as JSON
//	GET /ws                   WebSocket, balance "ledger": each text message
//	                          {"id":N,"command":"NAME"} is answered
//	                          {"id":N,"type":"response","status":"success","result":{}},
//	                          with "warning":"load" at or above -warn;
//	                          at or above -drop: close 1008 "threshold exceeded"
//	DELETE /admin/limits/SCOPE?caller=ADDRESS or ?user=NAME
//	                          with -admin-token, not limited: with header
//	                          X-Admin-Token: TOKEN, clears that caller's counts in
//	                          SCOPE (api, login, autocomplete.NAME or ledger) and answers
//	                          204; 403 for a missing or wrong token (nothing
//	                          changes), 404 for an unknown scope, 400 for a bad
//	                          ADDRESS (IPv4, or IPv6 counted by its /64) or for
//	                          neither or both of caller and user, each with
//	                          {"error": "..."}; without -admin-token the route
//	                          does not exist
//	GET /debug/limits         with -admin-token, not limited: the live view (package
//	                          liveview) for the holder of TOKEN, given in header
//	                          X-Admin-Token or as the password of HTTP Basic
//	                          authentication (401 otherwise): decisions per second
//	                          by scope, kind and outcome over the last 15 minutes,
//	                          and the callers refused most, refreshed in place;
//	                          ?format=json gives the same as JSON; POST with a
//	                          reset button's form and X-CSRF-Token clears that
//	                          caller's counts; without -admin-token the route does
//	                          not exist
//	POST /rpc                 JSON-RPC, balance "ledger": body
//	                          {"method":"NAME","params":[{}]}, answer
//	                          200 {"result":{"status":"success"}}, with
//	                          "warning":"load" inside result at or above -warn;
//	                          at or above -drop: 503 "Server is overloaded"
//
// /ws and /rpc share one decaying balance per caller, the XRP Ledger
// server's model: ping and server_info cost 20, ledger and account_tx 400,
// path_find and ripple_path_find 3000, any other command 100; -warn and
// -drop override the thresholds (5000 and 15000; a -warn above the drop
// threshold is a usage error, and a -drop below 5000 alone warns at the
// drop), and every drop is logged
// once, when the caller becomes dropped: "Consumer entry CALLER dropped
// with balance N at or above drop threshold T".
//
// NAME is one of the search boxes of package autocomplete: project,
// dataset, sample, measurement, person, organization, publication, tag,
// ror. Each has limits of its own, counted apart from the API's.
//
// Any other path is 404, and a path above asked with another method 405,
// neither limited nor counted. The answers (status, the rate-limit fields,
// the bodies) are the same on every -framework.
//
// "Authorization: Bearer NAME" signs the caller in as user NAME (a
// demonstration: there is no password); without it the caller is anonymous
// and counted by address. POST /api/login is always counted by address,
// as an anonymous caller, Authorization or not, 5 failed attempts per 15
// minutes and 20 a day (login.anon=5/15min,20/day): every attempt is
// counted before the password is checked and a right one is given back,
// so that 50 wrong attempts at once get five 401s and 45 429s. -rates replaces starting rates, as in
// -rates "api.anon=3/min,100/day autocomplete.project.user=10/min,1000/day";
// a scope it does not name keeps its starting values, and the long units
// are accepted (api.anon=3/minutes,100/days). -admins names users
// exempt from all limits, /ws and /rpc included. -plan-users gives the
// users it names their plan's rates in scope "api", set in -rates as
// api.user@PLAN (-plan-users "gold=alice,bob" -rates
// "api.user@gold=10/min,1000/day"), and RateLimit-Policy shows them; a
// plan without rates, or rates of a plan without users, is a usage error
// (status 2). Counts are kept in memory unless -redis (by
// default $REDIS_URL) names a Redis server. -shadow serves every request
// but counts and reports it as if the limits were enforced (the RateLimit
// header shows the units left, r=0 once a caller has used its limit). -trusted-proxies reads
// X-Forwarded-For only from peers inside the networks given. -headers says
// which responses carry RateLimit and RateLimit-Policy (and, on /ws and
// /rpc, Ratescope-Warning): all (the default), refused (refusals only) or
// none; a refusal keeps Retry-After whatever it says.
//
// -exempt-networks serves the callers whose counted address (after the
// proxy rules, anonymous or signed in) is in one of the networks given
// without limits, in every scope, /ws and /rpc included. -fail-closed names
// scopes (api, autocomplete.NAME, ledger, login) that refuse their requests
// while the store fails: 503 with Retry-After (the Redis store's breaker
// back-off, or 1 second), the JSON body saying the limits cannot be
// checked, before the handler runs (a sign-in's password is not checked);
// /ws closes with 1013. -fail-local names window scopes (not ledger) that
// decide in the process's memory while the store fails, with their limits
// (outcome local), and carry what they counted into Redis once it answers
// again. The other scopes keep failing open. A request whose Redis answers
// late is decided in memory in every scope. An unknown scope, or one in
// both lists, is a usage error.
//
// At startup the portal logs ratescope's checks on stderr, among them W601
// while -num-proxies is not set. It exits with status 2 for a bad command
// line, including bad rates, and stops gracefully on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ratescope/ratescope/checks"
	"github.com/ratescope/ratescope/examples/portal/internal/echo5portal"
	"github.com/ratescope/ratescope/examples/portal/internal/echoportal"
	"github.com/ratescope/ratescope/examples/portal/internal/ginportal"
	"github.com/ratescope/ratescope/examples/portal/internal/portal"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stderr))
}

// run runs the portal until SIGINT or SIGTERM and returns the exit status.
func run(args []string, getenv func(string) string, stderr io.Writer) int {
	opts, err := portal.ParseFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "portal:", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	app, err := portal.New(opts, logger)
	if err != nil {
		fmt.Fprintln(stderr, "portal:", err)
		var ue *portal.UsageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	defer app.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	checks.Log(ctx, logger, checks.Run(ctx, app.Limiter.Config()))

	var h http.Handler
	switch opts.Framework {
	case "echo":
		h, err = echoportal.New(app)
	case "echo5":
		h, err = echo5portal.New(app)
	default:
		h, err = ginportal.New(app)
	}
	if err != nil {
		fmt.Fprintln(stderr, "portal:", err)
		return 1
	}
	// The search page at / is the same on every framework.
	h, err = portal.WithPage(h)
	if err != nil {
		fmt.Fprintln(stderr, "portal:", err)
		return 1
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		fmt.Fprintln(stderr, "portal:", err)
		return 1
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Info("portal: listening", "url", "http://"+ln.Addr().String(),
		"framework", opts.Framework, "store", app.StoreName)

	select {
	case err := <-served:
		fmt.Fprintln(stderr, "portal:", err)
		return 1
	case <-ctx.Done():
	}
	stop()
	logger.Info("portal: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		fmt.Fprintln(stderr, "portal: shutdown:", err)
		return 1
	}
	return 0
}
