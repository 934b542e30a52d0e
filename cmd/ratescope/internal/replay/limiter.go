package replay

// This file is the only one of the package that uses packages core,
// memstore, checks and autocomplete: the limiter a replay decides with is
// the library's own, built from the same settings as an application's.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/ratescope/ratescope/autocomplete"
	"github.com/ratescope/ratescope/checks"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/internal/proxyflag"
)

// Settings are the settings of the limiter a replay builds: those of the
// application, as its flags or configuration give them, and how the log
// relates to it.
type Settings struct {
	// Rates replaces the starting rates of scopes (SCOPE.KIND=RATE,...),
	// as core.Config.Rates does.
	Rates core.RateTable
	// NumProxies is the application's number of reverse proxies, the
	// one that wrote the log included. Default: 1.
	NumProxies *int
	// TrustedProxies are the application's trusted proxy networks.
	TrustedProxies core.Networks
	// Routes map paths to scopes, added to [DefaultRoutes]: a route
	// with the prefix of a default one replaces it.
	Routes Routes
	// MaxEntries bounds the entries of each store (memstore.Config), and
	// the callers whose statistics are kept. Default: memstore's,
	// 1,048,576.
	MaxEntries int
	// LoggedBy says who wrote the log: "proxy" (the default), a reverse
	// proxy in front of the application, or "app", the application
	// itself. See docs/adr/0019-replaying-access-logs.md.
	LoggedBy string
	// ProxyAddr is the address of the proxy that wrote the log, the peer
	// of every request the application received, when LoggedBy is
	// "proxy". Default: the first address of TrustedProxies, or
	// 127.0.0.1.
	ProxyAddr string
}

// DefaultSettings returns the defaults: one proxy, the log written by it,
// the default routes.
func DefaultSettings() Settings {
	return Settings{NumProxies: new(1), LoggedBy: "proxy"}
}

// Register adds the flags of the settings to fs: -rates, -num-proxies,
// -trusted-proxies, -route, -max-entries, -logged-by and -proxy-addr.
func (s *Settings) Register(fs *flag.FlagSet) {
	fs.Var((*rawTable)(&s.Rates), "rates", "the rates: `SCOPE.KIND=RATE[,RATE...] ...` (as core.RateTable reads them), over each scope's starting values")
	fs.Var(proxyflag.Value{N: &s.NumProxies}, "num-proxies", "the application's number of reverse proxies, the one that wrote the log included (`N` or unset)")
	fs.TextVar(&s.TrustedProxies, "trusted-proxies", s.TrustedProxies, "the application's trusted proxy networks: `CIDR[,CIDR...]`")
	fs.Var(&s.Routes, "route", "`PREFIX=SCOPE[:COST]`: requests whose path starts with PREFIX are decided in SCOPE at COST (default 1); repeatable; SCOPE ending in .* takes the next part of the path; added to /api/=api and /autocomplete/=autocomplete.*, a route of the same PREFIX replacing one of them; a SCOPE of your own needs its rates in -rates")
	fs.IntVar(&s.MaxEntries, "max-entries", 0, "the most callers kept in memory, per store and for the statistics (default 1048576)")
	fs.StringVar(&s.LoggedBy, "logged-by", s.LoggedBy, "who wrote the log: proxy (a reverse proxy in front of the application) or app (the application itself)")
	fs.StringVar(&s.ProxyAddr, "proxy-addr", "", "the address of the proxy that wrote the log, as the application sees it (default: the first trusted network's, or 127.0.0.1)")
}

// rawTable reads -rates as core.RateTable does, but leaves checking the
// rates to core.New, so that ratescope check reports a bad rate under its
// id (E001) as the application's startup would.
type rawTable core.RateTable

// Set adds the SCOPE.KIND=RATE parts of s.
func (t *rawTable) Set(s string) error {
	if *t == nil {
		*t = rawTable{}
	}
	for _, part := range strings.Fields(s) {
		k, v, _ := strings.Cut(part, "=")
		(*t)[k] = v
	}
	return nil
}

// String returns the table as core.RateTable writes it.
func (t *rawTable) String() string {
	if t == nil {
		return ""
	}
	return core.RateTable(*t).String()
}

// caller is who a request is counted against, in a form that is cheap to
// hash: the user id, or the 16 bytes and the prefix length of the
// anonymous caller's network (bits 0: the address is unknown).
type caller struct {
	user string
	addr [16]byte
	bits uint8
}

// core returns the caller as core counts it.
func (c caller) core() core.Caller {
	if c.user != "" || c.bits == 0 {
		return core.UserCaller(c.user)
	}
	return core.NetworkCaller(netip.PrefixFrom(netip.AddrFrom16(c.addr).Unmap(), int(c.bits)))
}

func fromCore(c core.Caller) caller {
	if c.User() != "" || !c.Network().IsValid() {
		return caller{user: c.User()}
	}
	return caller{addr: c.Network().Addr().As16(), bits: uint8(c.Network().Bits())}
}

// String returns the caller as core.Caller writes it: the user id, the
// IPv4 address, the IPv6 network or "unknown".
func (c caller) String() string { return c.core().String() }

// kind returns 0 for an anonymous caller, 1 for a signed-in one.
func (c caller) kind() int { return int(core.UserCaller(c.user).Kind()) }

// known is a caller found, and its core form.
type known struct {
	id caller
	c  core.Caller
	// The statistics of the caller's last request, and their group:
	// most callers stay in one scope, so this saves a map lookup.
	group *group
	stat  *callerStat
	// addr is, for a signed-in caller, the anonymous caller of its
	// address; seen tells that the replay counted the user there.
	addr caller
	seen bool
}

// kindName returns "anon" or "user".
func kindName(k int) string { return core.Kind(k).String() }

// A limit is one rate of a scope and kind, as the report shows it.
type limit struct {
	Limit  int64
	Period time.Duration
}

// scopeInfo describes one scope of a limiter: its name and the rates of
// each kind.
type scopeInfo struct {
	name   string
	shadow bool
	rates  [2][]limit
	text   [2]string // "60/min,1000/day"
}

// decider decides requests with one limiter on memstore, on a clock set
// from each line's time.
type decider struct {
	lim    *core.Limiter
	store  *memstore.Store
	now    time.Time
	req    http.Request
	fwd    []string
	peer   string
	proxy  bool
	key    []byte
	cache  map[string]*known
	scopes map[string]scopeInfo
}

// newDecider builds the limiter of s, with the rates of spec (a rate
// table in the text form) over s.Rates.
func newDecider(s Settings, spec string) (*decider, error) {
	table := core.RateTable{}
	maps.Copy(table, s.Rates)
	if spec != "" {
		var over core.RateTable
		if err := over.UnmarshalText([]byte(spec)); err != nil {
			return nil, err
		}
		maps.Copy(table, over)
	}
	cfg, store, err := s.config(table)
	if err != nil {
		return nil, err
	}
	d := &decider{store: store, cache: map[string]*known{}, scopes: map[string]scopeInfo{}}
	cfg.Now = func() time.Time { return d.now }
	lim, err := core.New(cfg)
	if err != nil {
		return nil, err
	}
	d.lim = lim
	d.req.Header = http.Header{}
	d.proxy = s.LoggedBy != "app"
	d.peer = s.proxyAddr()
	for _, sc := range lim.Config().Scopes {
		info := scopeInfo{name: sc.Name, shadow: sc.Shadow}
		for k, rates := range [2][]core.Rate{sc.Anon, sc.User} {
			for _, r := range rates {
				info.rates[k] = append(info.rates[k], limit{Limit: r.Limit, Period: r.Period})
			}
			info.text[k] = rateText(rates)
		}
		d.scopes[sc.Name] = info
	}
	return d, nil
}

// config returns the core.Config of s with the rates of table, on a new
// memstore whose background sweep is off (the replay sweeps on the log's
// clock).
func (s Settings) config(table core.RateTable) (core.Config, *memstore.Store, error) {
	if s.LoggedBy != "proxy" && s.LoggedBy != "app" {
		return core.Config{}, nil, fmt.Errorf("-logged-by %q: want proxy or app", s.LoggedBy)
	}
	if s.ProxyAddr != "" {
		if _, err := netip.ParseAddr(s.ProxyAddr); err != nil {
			return core.Config{}, nil, fmt.Errorf("-proxy-addr %q: not an IP address", s.ProxyAddr)
		}
	}
	scopes, err := s.scopes()
	if err != nil {
		return core.Config{}, nil, err
	}
	store := memstore.New(memstore.Config{MaxEntries: s.MaxEntries, SweepInterval: -1})
	return core.Config{
		Store:          store,
		Scopes:         scopes,
		Rates:          table,
		NumProxies:     s.NumProxies,
		TrustedProxies: s.TrustedProxies,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, store, nil
}

// scopes returns the library's scopes (api and the search boxes), and a
// scope with api's starting values for each scope of the application's
// own that a route names and s.Rates gives rates. A route to any other
// scope is an error: a replay would limit its requests on rates nobody
// chose, or on none.
func (s Settings) scopes() ([]core.Scope, error) {
	scopes := append(core.DefaultScopes(), autocomplete.Scopes()...)
	library := len(scopes)
	var errs []error
	for _, r := range s.RoutesInForce() {
		if prefix, ok := strings.CutSuffix(r.Scope, ".*"); ok {
			if !slices.ContainsFunc(scopes[:library], func(sc core.Scope) bool { return strings.HasPrefix(sc.Name, prefix+".") }) {
				errs = append(errs, fmt.Errorf("-route %s: no scope of the library starts with %q (the library's: api, autocomplete.*)", r, prefix+"."))
			}
			continue
		}
		if slices.ContainsFunc(scopes, func(sc core.Scope) bool { return sc.Name == r.Scope }) {
			continue
		}
		rated := false
		for k := range s.Rates {
			rated = rated || strings.HasPrefix(k, r.Scope+".")
		}
		if !rated {
			errs = append(errs, fmt.Errorf("-route %s: scope %q is not the library's (api, autocomplete.NAME); a scope of the application's own needs its rates in -rates (%s.anon=... %s.user=...)", r, r.Scope, r.Scope, r.Scope))
			continue
		}
		sc := core.DefaultScopes()[0]
		sc.Name = r.Scope
		scopes = append(scopes, sc)
	}
	return scopes, errors.Join(errs...)
}

// proxyAddr returns the peer the application saw when a proxy wrote the
// log.
func (s Settings) proxyAddr() string {
	if s.ProxyAddr != "" {
		return s.ProxyAddr
	}
	if len(s.TrustedProxies) > 0 {
		return s.TrustedProxies[0].Addr().String()
	}
	return "127.0.0.1"
}

// caller returns who the limiter counts the request of l against: the
// user, or the address core's proxy rules find in the request the
// application received. The answer for the same address, header and user
// is kept for the next lines of the same caller (at most 65,536 of them).
func (d *decider) caller(l *Line) *known {
	d.key = append(append(append(append(append(d.key[:0], l.Addr...), 0), l.Forwarded...), 0), l.User...)
	if k, ok := d.cache[string(d.key)]; ok {
		return k
	}
	var user string
	if len(l.User) > 0 {
		user = string(l.User)
	}
	d.fwd = d.fwd[:0]
	if len(l.Forwarded) > 0 {
		d.fwd = append(d.fwd, string(l.Forwarded))
	}
	if d.proxy {
		// The proxy appended the address it saw to X-Forwarded-For,
		// and the application's peer is the proxy.
		d.fwd = append(d.fwd, string(l.Addr))
		d.req.RemoteAddr = d.peer
	} else {
		d.req.RemoteAddr = string(l.Addr)
	}
	if len(d.fwd) > 0 {
		d.req.Header["X-Forwarded-For"] = d.fwd
	} else {
		delete(d.req.Header, "X-Forwarded-For")
	}
	c := d.lim.Caller(&d.req, core.UserCaller(user))
	k := &known{id: fromCore(c), c: c}
	if user != "" {
		k.addr = fromCore(d.lim.Caller(&d.req, core.UserCaller("")))
	}
	if len(d.cache) >= 1<<16 {
		clear(d.cache)
	}
	d.cache[string(d.key)] = k
	return k
}

// allow decides a request by k in scope at cost at time t, counting it if
// allowed, and reports whether it is allowed.
func (d *decider) allow(scope string, k *known, cost int64, t time.Time) bool {
	d.now = t
	dec, err := d.lim.AllowN(context.Background(), scope, k.c, cost)
	return err == nil && dec.Allowed
}

// sweep drops the entries whose windows are empty at t, as the
// application's store does once a minute.
func (d *decider) sweep(t time.Time) { d.store.Sweep(t) }

// entries returns the number of entries the store holds.
func (d *decider) entries() int { return d.store.Len() }

// A Message is one finding of the startup checks.
type Message struct {
	ID    string
	Error bool
	Text  string
}

// Check builds the limiter of s as [Replay] does and returns the messages
// of the startup checks (E0xx when it cannot be built, W6xx otherwise;
// W602, about the replay's own memory store, is left out), and the
// scopes it enforces. The error is the one building it returns.
func Check(s Settings) ([]Message, []ScopeLimits, error) {
	cfg, _, err := s.config(s.Rates)
	if err != nil {
		return nil, nil, err
	}
	var out []Message
	for _, m := range checks.Run(context.Background(), cfg) {
		if m.ID == "ratescope.W602" {
			continue
		}
		text := m.Text
		if m.Hint != "" {
			text += " " + m.Hint
		}
		out = append(out, Message{ID: m.ID, Error: m.Level == checks.Error, Text: text})
	}
	lim, err := core.New(cfg)
	if err != nil {
		return out, nil, err
	}
	var scopes []ScopeLimits
	for _, sc := range lim.Config().Scopes {
		l := ScopeLimits{Scope: sc.Name, Anon: rateText(sc.Anon), User: rateText(sc.User)}
		for _, plan := range lim.Plans(sc.Name) {
			l.Plans = append(l.Plans, PlanLimits{Plan: plan, User: rateText(sc.Plans[plan])})
		}
		scopes = append(scopes, l)
	}
	return out, scopes, nil
}

// ScopeLimits are the rates a scope enforces for each kind of caller.
type ScopeLimits struct {
	Scope string
	Anon  string
	User  string
	// Plans are the scope's plans, sorted by name.
	Plans []PlanLimits
}

// PlanLimits are the rates of one plan of signed-in callers.
type PlanLimits struct {
	Plan string
	User string
}

// rateText returns rates as a core.RateTable value gives them: "60/min,1000/day".
func rateText(rates []core.Rate) string {
	parts := make([]string, len(rates))
	for i, r := range rates {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}
