// Package portal is the framework-free part of the example portal: the
// command line, the limiter, who the caller is, and the data the routes
// serve, the search boxes' searches among them. Packages ginportal and
// echoportal put it on Gin and on Echo, with the same routes and the same
// behaviour; a route added to one is added to the other.
package portal

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratescope/ratescope/autocomplete"
	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/internal/proxyflag"
	"github.com/ratescope/ratescope/liveview"
)

// ScopeAPI is the scope of the /api routes that are limited.
const ScopeAPI = "api"

// DefaultExportCost is the cost of GET /api/export unless -export-cost
// says otherwise.
const DefaultExportCost = 5

// ExportRoute is the route pattern of GET /api/export, the key of its cost.
const ExportRoute = "/api/export"

// APICosts returns the costs of the routes of the /api group that do not
// cost 1, keyed by route pattern: the RouteCosts of the group's middleware.
func (a *App) APICosts() map[string]int64 {
	return map[string]int64{ExportRoute: a.ExportCost}
}

// UserKey is the framework context key under which the sign-in middleware
// leaves the signed-in user's name, and from which the limiter reads it.
const UserKey = "portal.user"

// Frameworks are the values -framework accepts.
var Frameworks = []string{"gin", "echo", "echo5"}

// A UsageError is a bad command line or configuration: the program exits
// with status 2 for it.
type UsageError struct {
	Err error
}

// Error returns the message of Err.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *UsageError) Unwrap() error { return e.Err }

func usage(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// Options are the portal's settings, as read from the command line.
type Options struct {
	// Addr is the address to listen on. Default: 127.0.0.1:8080.
	Addr string
	// Framework is "gin", "echo" (Echo v4) or "echo5" (Echo v5). Default:
	// "gin".
	Framework string
	// RedisURL is the Redis server keeping the counts, as redis.ParseURL
	// reads it. Default: $REDIS_URL; empty keeps the counts in memory.
	RedisURL string
	// NumProxies is the number of reverse proxies in front. Default:
	// nil, unset, which the startup checks report as W601.
	NumProxies *int
	// TrustedProxies are the networks of the reverse proxies: when set,
	// X-Forwarded-For is read only from peers inside them. Default: none.
	TrustedProxies core.Networks
	// Rates replace the starting rates, keyed SCOPE.KIND: the scope "api",
	// [ScopeLogin] or a search box's, autocomplete.NAME, and
	// api.user@PLAN for the plans of PlanUsers. A scope it does not name
	// keeps its starting values.
	Rates core.RateTable
	// Shadow runs the whole limiter in shadow mode: every request is
	// served, and counted and reported as if the limits were enforced.
	Shadow bool
	// Metrics serves GET /metrics, not limited: [MetricsPrometheus] in the
	// Prometheus text format, [MetricsOTel] what the otel module records
	// into an OpenTelemetry SDK, as JSON (otel.go). Default: "", no
	// /metrics.
	Metrics string
	// ExportCost is the cost of GET /api/export in scope "api". Default
	// (0): [DefaultExportCost].
	ExportCost int64
	// Admins are the users exempt from all limits.
	Admins []string
	// Warn and Drop are the warning and drop thresholds of the balance of
	// /ws and /rpc. Default: 0, rippled's 5000 and 15000 (Warn at most
	// Drop: a Drop below 5000 alone lowers the warning to it).
	Warn, Drop int64
	// Now is the clock; not a flag. Default: time.Now.
	Now func() time.Time

	// AdminToken, when set, enables DELETE /admin/limits/SCOPE with the
	// header X-Admin-Token equal to it ([App.ResetLimits]), and the live
	// view at GET and POST /debug/limits ([App.LiveView]). Default: "", no
	// such routes.
	AdminToken string
	// ExemptNetworks are networks whose callers (by the address the
	// limiter counts, after the proxy rules; anonymous or signed in) are
	// never limited, in every scope. Default: none.
	ExemptNetworks core.Networks
	// FailClosed names the scopes (window or balance) that refuse their
	// requests with 503 and Retry-After while the store fails; the others
	// fail open. A name that is no scope is a usage error. Default: none.
	FailClosed []string
	// FailLocal names the window scopes that decide their requests in
	// the process's memory while the store fails (core.FailLocal), and
	// carry what they counted into it once it answers again. A scope
	// named by FailClosed too, the balance scope or a name that is no
	// scope is a usage error. Default: none.
	FailLocal []string
	// PlanUsers are the users of each plan (-plan-users): they get the
	// plan's rates in scope "api", given in Rates as api.user@PLAN. A
	// plan without rates, or rates of a plan without users, is a usage
	// error. Default: none, every user has api.user.
	PlanUsers PlanUsers
	// Headers says which responses carry the rate-limit fields
	// (core.Config.Headers): all (default), refused or none; a 429 keeps
	// Retry-After.
	Headers core.HeaderMode
}

// ParseFlags reads the command line args (without the program name). It
// reads $REDIS_URL through getenv and writes usage to output. The error is
// a [*UsageError], or flag.ErrHelp for -h.
func ParseFlags(args []string, getenv func(string) string, output io.Writer) (Options, error) {
	o := Options{}
	fs := flag.NewFlagSet("portal", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:8080", "`HOST:PORT` to listen on")
	fs.StringVar(&o.Framework, "framework", "gin", "web framework: "+strings.Join(Frameworks, ", ")+" (Echo v5)")
	fs.StringVar(&o.RedisURL, "redis", getenv("REDIS_URL"), "Redis `URL` for the counts (default $REDIS_URL; empty: in memory)")
	fs.Var(proxyflag.Value{N: &o.NumProxies}, "num-proxies", "number `N` of reverse proxies in front (default: unset, warned as W601; 0 for none)")
	fs.TextVar(&o.TrustedProxies, "trusted-proxies", o.TrustedProxies, "comma-separated `CIDR`s of the reverse proxies: X-Forwarded-For is read only from peers inside them")
	fs.Var(ratesFlag{&o.Rates}, "rates", "space-separated `SPEC`s SCOPE.KIND=RATE[,RATE...], SCOPE api, login or autocomplete.NAME, api.user@PLAN for -plan-users, e.g. \"api.anon=3/min,100/day autocomplete.project.user=10/minutes,1000/days\"")
	fs.BoolVar(&o.Shadow, "shadow", false, "shadow mode: serve every request, count and report it as if the limits were enforced")
	fs.TextVar(&o.Headers, "headers", o.Headers, "`MODE` of the rate-limit fields: all (every response, the default), refused (refusals only) or none (a 429 keeps Retry-After)")
	fs.Var(metricsFlag{&o.Metrics}, "metrics", "serve GET /metrics: `prometheus` (the text format; -metrics alone) or otel (OpenTelemetry, as JSON)")
	fs.Int64Var(&o.ExportCost, "export-cost", DefaultExportCost, "cost `N` of GET /api/export in scope api, 1 or more")
	var admins string
	fs.StringVar(&admins, "admins", "", "comma-separated user `NAMES` exempt from all limits")
	fs.Int64Var(&o.Warn, "warn", 0, "warning threshold `N` of the /ws and /rpc balance, at most the drop threshold (default 5000, or -drop if lower)")
	fs.Int64Var(&o.Drop, "drop", 0, "drop threshold `N` of the /ws and /rpc balance (default 15000)")
	fs.StringVar(&o.AdminToken, "admin-token", "", "enables DELETE /admin/limits/SCOPE?caller=ADDRESS|user=NAME with header X-Admin-Token: `TOKEN`, which clears a caller's counts in SCOPE, and the live view at /debug/limits")
	fs.TextVar(&o.ExemptNetworks, "exempt-networks", o.ExemptNetworks, "comma-separated `CIDR`s whose callers are never limited, in every scope")
	var failClosed string
	fs.StringVar(&failClosed, "fail-closed", "", "comma-separated `SCOPE`s (api, login, autocomplete.NAME, ledger) that refuse with 503 while the store fails")
	var failLocal string
	fs.StringVar(&failLocal, "fail-local", "", "comma-separated `SCOPE`s (api, login, autocomplete.NAME) that decide in memory, with their limits, while the store fails")
	fs.Var(&o.PlanUsers, "plan-users", "`PLAN=NAME[,NAME...][;PLAN=...]`: the users of each plan, who get the rates of api.user@PLAN in -rates (e.g. -plan-users gold=alice -rates api.user@gold=10/min,1000/day)")
	if err := fs.Parse(metricsArg(args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, &UsageError{Err: err}
	}
	if fs.NArg() > 0 {
		return o, usage("unexpected argument %q", fs.Arg(0))
	}
	if !validFramework(o.Framework) {
		return o, usage("-framework %q: want one of %s", o.Framework, strings.Join(Frameworks, ", "))
	}
	if o.ExportCost < 1 {
		return o, usage("-export-cost %d: want 1 or more", o.ExportCost)
	}
	o.Admins = commaList(admins)
	o.FailClosed, o.FailLocal = commaList(failClosed), commaList(failLocal)
	for _, name := range o.FailLocal {
		if slices.Contains(o.FailClosed, name) {
			return o, usage("scope %q is in both -fail-closed and -fail-local: a scope fails one way", name)
		}
		if name == ScopeLedger {
			return o, usage("-fail-local %q: the balance scope can fail open or closed, not local", name)
		}
	}
	if err := checkPlans(o.PlanUsers, o.Rates); err != nil {
		return o, &UsageError{Err: err}
	}
	return o, nil
}

// ratesFlag is -rates: each flag adds its parts to the table, a key of a
// later flag replacing the same key of an earlier one.
type ratesFlag struct{ t *core.RateTable }

func (f ratesFlag) String() string {
	if f.t == nil {
		return ""
	}
	return f.t.String()
}

func (f ratesFlag) Set(s string) error {
	var parts core.RateTable
	if err := parts.UnmarshalText([]byte(s)); err != nil {
		return err
	}
	if *f.t == nil {
		*f.t = core.RateTable{}
	}
	maps.Copy(*f.t, parts)
	return nil
}

// commaList returns the names of a comma-separated list, without spaces
// and empty names.
func commaList(list string) []string {
	var names []string
	for name := range strings.SplitSeq(list, ",") {
		if name = strings.TrimSpace(name); name != "" {
			names = append(names, name)
		}
	}
	return names
}

// setFailModes sets the fail mode of the scopes that -fail-closed (all
// but the balance scope) and -fail-local name, or reports a name that is
// no scope.
func setFailModes(scopes []core.Scope, closed, local []string) error {
	set := func(names []string, mode core.FailMode) error {
		for _, name := range names {
			i := slices.IndexFunc(scopes, func(s core.Scope) bool { return s.Name == name })
			if i < 0 {
				known := []string{ScopeLedger}
				for _, s := range scopes {
					known = append(known, s.Name)
				}
				slices.Sort(known)
				return fmt.Errorf("-fail-%s: %q is no known scope; want one of %s", mode, name, strings.Join(known, ", "))
			}
			scopes[i].FailMode = mode
		}
		return nil
	}
	return errors.Join(set(windowScopes(closed), core.FailClosed), set(local, core.FailLocal))
}

func validFramework(f string) bool {
	for _, v := range Frameworks {
		if f == v {
			return true
		}
	}
	return false
}

// App is the portal without its web framework: the limiter, the admins,
// and the handlers' logic. Build it with [New] and release it with
// [App.Close]. Its methods are safe for concurrent use.
type App struct {
	// Limiter limits the /api routes in scope "api" and each search box
	// in a scope of its own, autocomplete.NAME.
	Limiter *core.Limiter
	// StoreName is "memory" or "redis".
	StoreName string
	// Metrics answers GET /metrics, counting the decisions: a [*Metrics]
	// or the OpenTelemetry SDK's (otel.go); nil unless Options.Metrics.
	Metrics http.Handler
	// ExportCost is the cost of GET /api/export.
	ExportCost int64
	// TrustedProxies are Options.TrustedProxies, for the frameworks' own
	// client address.
	TrustedProxies core.Networks

	admins   map[string]bool
	plans    map[string]string // user -> plan (plans.go)
	searches searchCounts
	ledger   ledger
	close    func() error

	adminToken string         // Options.AdminToken (admin.go)
	live       *liveview.View // with -admin-token (live.go)
	logger     *slog.Logger
}

// New builds the App of o, logging to logger. Bad rates or a bad Redis URL give
// a [*UsageError] that names them.
func New(o Options, logger *slog.Logger) (*App, error) {
	a := &App{admins: map[string]bool{}, searches: newSearchCounts(), ExportCost: o.ExportCost, TrustedProxies: o.TrustedProxies}
	a.adminToken, a.logger = o.AdminToken, logger
	if a.logger == nil {
		a.logger = slog.Default()
	}
	if a.ExportCost == 0 {
		a.ExportCost = DefaultExportCost
	}
	for _, name := range o.Admins {
		a.admins[name] = true
	}
	a.plans = map[string]string{}
	for plan, users := range o.PlanUsers {
		for _, name := range users {
			a.plans[name] = plan
		}
	}
	var store interface {
		core.Store
		balance.Store
	}
	if o.RedisURL == "" {
		ms := memstore.New(memstore.Config{})
		store, a.StoreName, a.close = ms, "memory", ms.Close
	} else {
		ropts, err := redis.ParseURL(o.RedisURL)
		if err != nil {
			return nil, usage("-redis: %w", err)
		}
		ropts.ContextTimeoutEnabled = true
		client := redis.NewClient(ropts)
		rs, err := redisstore.New(redisstore.Config{Client: client, Logger: logger})
		if err != nil {
			_ = client.Close()
			return nil, err
		}
		store, a.StoreName, a.close = rs, "redis", client.Close
	}
	scopes := append(append(core.DefaultScopes(), autocomplete.Scopes()...), LoginScope())
	for i := range scopes {
		scopes[i].Shadow = o.Shadow
	}
	if err := setFailModes(scopes, o.FailClosed, o.FailLocal); err != nil {
		_ = a.close()
		return nil, usage("%w", err)
	}
	cfg := core.Config{
		Store:          store,
		Scopes:         scopes,
		Rates:          o.Rates,
		NumProxies:     o.NumProxies,
		TrustedProxies: o.TrustedProxies,
		Now:            o.Now,
		Logger:         logger,
		ExemptNetworks: o.ExemptNetworks,
		Headers:        o.Headers,
	}
	var prom *Metrics
	var otel *otelMetrics
	switch o.Metrics {
	case MetricsPrometheus:
		var names []string
		for _, s := range cfg.Scopes {
			names = append(names, s.Name)
		}
		names = append(names, ScopeLedger)
		prom = newMetrics(names)
		a.Metrics, cfg.Observe = prom, prom.Observe
	case MetricsOTel:
		var err error
		if otel, err = newOTelMetrics(); err != nil {
			_ = a.close()
			return nil, err
		}
		closeStore := a.close
		a.Metrics, cfg.Observe = otel, otel.recorder.Observe
		a.close = func() error { return errors.Join(otel.Close(), closeStore()) }
	}
	if err := a.observeLive(&cfg); err != nil {
		_ = a.close()
		return nil, err
	}
	lim, err := core.New(cfg)
	if err != nil {
		_ = a.close()
		return nil, usage("-rates, -trusted-proxies, -exempt-networks, -fail-closed or -fail-local: %w", err)
	}
	a.Limiter = lim
	if err := a.initLedger(o, store); err != nil {
		_ = a.close()
		return nil, err
	}
	if a.live != nil {
		a.live.AllowReset(a)
	}
	if prom != nil {
		prom.limiter = lim
	}
	if otel != nil {
		if err := errors.Join(otel.recorder.Watch(lim), otel.recorder.Watch(store)); err != nil {
			_ = a.close()
			return nil, err
		}
	}
	return a, nil
}

// Close releases the store.
func (a *App) Close() error { return a.close() }

// Exempt reports whether the caller is an admin, exempt from all limits.
func (a *App) Exempt(c core.Caller) bool {
	return c.User() != "" && a.admins[c.User()]
}

// UserFromAuthorization returns the user an Authorization header signs in:
// NAME for "Bearer NAME" (a demonstration: there is no password), "" for
// anything else, an anonymous caller.
func UserFromAuthorization(h string) string {
	scheme, name, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(name)
}

// Identity is the body of GET /api/whoami: who the limiter counts.
type Identity struct {
	// Kind is "anon" or "user".
	Kind string `json:"kind"`
	// ID is the user name, or the anonymous caller's address or network.
	ID string `json:"id"`
}

// Whoami returns the identity the limiter counts for r made by user ("" if
// anonymous).
func (a *App) Whoami(r *http.Request, user string) Identity {
	c := a.Limiter.Caller(r, core.UserCaller(user))
	return Identity{Kind: c.Kind().String(), ID: c.String()}
}

// Record is one of the made-up records GET /api/records serves.
type Record struct {
	ID    int    `json:"id"`
	Title string `json:"title"`
	Year  int    `json:"year"`
}

// RecordList is the body of GET /api/records.
type RecordList struct {
	Records []Record `json:"records"`
}

var records = RecordList{Records: []Record{
	{ID: 1, Title: "Survey of the harbour lighthouses", Year: 1887},
	{ID: 2, Title: "Ledger of the Northern Canal Company", Year: 1902},
	{ID: 3, Title: "Letters from the weather station", Year: 1931},
}}

// ProxyList returns the networks as strings, for Gin's SetTrustedProxies;
// nil, trusting no proxy, when there are none.
func ProxyList(n core.Networks) []string {
	var out []string
	for _, p := range n {
		out = append(out, p.String())
	}
	return out
}

// Records returns the records.
func Records() RecordList { return records }
