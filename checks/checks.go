// Package checks runs ratescope's startup checks: problems in a deployment
// that no request would reveal until the limits fail to protect the API.
//
// A check returns [Message] values, each with an id (ratescope.W601), a
// level, a text and a hint. [Run] runs the checks of a configuration and
// its store, and [Log] logs messages, each with a short text and the id
// and hint as attributes; at startup:
//
//	checks.Log(ctx, slog.Default(), checks.Run(ctx, lim.Config()))
//
// To silence ids, or to fail on warnings in tests and CI, filter the
// messages with [Options]:
//
//	msgs, err := checks.Options{Silence: []string{"ratescope.W602"}, Strict: true}.Filter(checks.Run(ctx, lim.Config()))
//
// # The checks
//
// Errors, the problems [core.New] rejects; its error text starts with the
// id (see [core.ConfigError]), and [Run] reports each as a Message:
//
//   - ratescope.E001: an invalid rate, or a rate key that names no known
//     scope and kind.
//   - ratescope.E002: no store.
//   - ratescope.E003: a setting out of range (NumProxies, IPv6Bits, LoadRatio,
//     ErrorLogInterval, Headers).
//   - ratescope.E004: an invalid or duplicate scope name.
//   - ratescope.E005: an invalid network in TrustedProxies.
//
// Warnings:
//
//   - ratescope.W601: neither the number of proxies (Config.NumProxies)
//     nor the trusted proxies (Config.TrustedProxies) is set.
//   - ratescope.W602: the store keeps counts in one process's memory, so
//     with several processes each caller gets its limits once per process.
//   - ratescope.W603: the store cannot be reached at startup; until it can,
//     requests are allowed and not counted (fail open).
//   - ratescope.W604 to W607: the store's own deployment lets callers
//     escape their counts: a Redis that evicts counts or refuses writes
//     when full, a client that ignores context deadlines, a cluster that
//     stops when one master fails (package redisstore, Store.CheckStore).
//   - ratescope.W610: shadow mode is on for some scopes: nobody over their
//     limits is refused.
//   - ratescope.W611: TrustedProxies is set but NumProxies is 0, so no
//     X-Forwarded-For is read and the networks are unused.
//   - ratescope.W613: an exempt network (Config.ExemptNetworks) overlaps
//     a trusted proxy network (Config.TrustedProxies): the proxies' own
//     addresses are exempt wherever a caller is counted by one of them.
//   - ratescope.W612: the web framework's own client address (Gin's
//     ClientIP, Echo's RealIP) disagrees with the address ratescope
//     counts; from [ClientIP], which ginlimit.CheckClientIP and
//     echolimit.CheckClientIP call.
//
// Each id keeps its meaning between releases, so it can be searched for in
// logs and silenced.
//
// A store takes part in W602 and W603 by having the methods Shared() bool
// and Ping(context.Context) error, and reports problems of its own by
// having the method CheckStore(context.Context) []Message: the messages of
// its own deployment, nil when nothing is wrong, leaving out what it cannot
// find out, and returned by the time the context ends. [Run] calls it once.
package checks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/ratescope/ratescope/core"
)

// A Level says how serious a [Message] is.
type Level int

const (
	// Warning: the limits work, but not as the deployment most likely
	// intends.
	Warning Level = iota + 1
	// Error: the limits cannot work as configured.
	Error
)

// String returns "WARNING" or "ERROR".
func (l Level) String() string {
	if l == Error {
		return "ERROR"
	}
	return "WARNING"
}

// A Message is one finding of a check.
type Message struct {
	// ID identifies the message, such as "ratescope.W601"; it does not
	// change between releases, so it can be searched for and silenced.
	ID string
	// Level is Warning or Error.
	Level Level
	// Text says what is wrong, in one sentence.
	Text string
	// Hint says what to do about it.
	Hint string
}

// String returns the message on one line:
//
//	ratescope.W601 WARNING: the number of proxies is not set. HINT: ...
func (m Message) String() string {
	s := m.ID + " " + m.Level.String() + ": " + m.Text
	if m.Hint != "" {
		s += " HINT: " + m.Hint
	}
	return strings.ReplaceAll(s, "\n", " ")
}

// The ids of the warnings of this package. The E ids, of the errors, are
// those of [core.ConfigError] (ratescope.E001 to E005); those of a store's
// own warnings are its package's (W604 to W607 for redisstore).
const (
	idProxiesUnset     = "ratescope.W601"
	idStoreNotShared   = "ratescope.W602"
	idStoreUnreachable = "ratescope.W603"
	idShadowMode       = "ratescope.W610"
	idProxiesUnused    = "ratescope.W611"
	idClientIPDiffers  = "ratescope.W612"
	idExemptProxies    = "ratescope.W613"
)

// configHints are the hints of the E ids.
var configHints = map[string]string{
	"ratescope.E001": "Rates are written N/PERIOD (60/min, 1000/day, 100/15m) and keyed SCOPE.anon or SCOPE.user.",
	"ratescope.E002": "Set Config.Store: memstore.New for one process, the Redis store for several.",
	"ratescope.E003": "Leave the setting zero for its default, or give a value in the range the text says.",
	"ratescope.E004": "Scope names are lower-case letters, digits, '.', '_' and '-'; each is defined once.",
	"ratescope.E005": "Give networks as netip.Prefix values, or parse them with core.ParseNetworks (\"10.0.0.0/8,192.0.2.7\").",
}

// hintProxies explains both ways a wrong proxy count defeats the limits.
const hintProxies = "Set NumProxies to the number of reverse proxies or load balancers in front of the application. " +
	"Too high (or trusting the whole X-Forwarded-For header), and a caller who writes a new address in the header on every request is counted as a new caller each time, so no limit stops it. " +
	"Too low (or ignoring the header behind a proxy), and every caller is counted as the proxy, so one busy caller uses up everyone's allowance. " +
	"Until it is set, the peer address is used. Set 0 if the application faces the callers directly."

// configMessages returns the warnings that the configuration alone shows.
func configMessages(cfg core.Config) []Message {
	var msgs []Message
	if cfg.NumProxies == nil && len(cfg.TrustedProxies) == 0 {
		msgs = append(msgs, proxiesUnset())
	}
	if len(cfg.TrustedProxies) > 0 && cfg.NumProxies != nil && *cfg.NumProxies == 0 {
		msgs = append(msgs, Message{
			ID:    idProxiesUnused,
			Level: Warning,
			Text:  fmt.Sprintf("TrustedProxies is set (%s) but NumProxies is 0, so X-Forwarded-For is never read and the networks are unused.", cfg.TrustedProxies),
			Hint:  "Behind proxies, leave NumProxies unset (the networks alone say which entries to skip) or set it to the number of proxies; facing the callers directly, remove TrustedProxies.",
		})
	}
	if m, ok := exemptProxies(cfg); ok {
		msgs = append(msgs, m)
	}
	var shadow []string
	for _, s := range cfg.Scopes {
		if s.Shadow {
			shadow = append(shadow, s.Name)
		}
	}
	if len(shadow) > 0 {
		what := "scope " + shadow[0] + " is"
		if len(shadow) > 1 {
			what = "scopes " + strings.Join(shadow, ", ") + " are"
		}
		msgs = append(msgs, Message{
			ID:    idShadowMode,
			Level: Warning,
			Text:  what + " in shadow mode: callers over a limit are counted and logged but served.",
			Hint:  "Fine while rolling a limit out: watch the shadow outcomes, then set the scope's Shadow false to enforce it.",
		})
	}
	return msgs
}

// exemptProxies returns W613 when an exempt network overlaps a trusted
// proxy network.
func exemptProxies(cfg core.Config) (Message, bool) {
	var overlaps []string
	for _, e := range cfg.ExemptNetworks {
		for _, p := range cfg.TrustedProxies {
			if e.Overlaps(p) {
				overlaps = append(overlaps, e.String()+" and "+p.String())
			}
		}
	}
	if len(overlaps) == 0 {
		return Message{}, false
	}
	return Message{
		ID:    idExemptProxies,
		Level: Warning,
		Text:  "exempt networks overlap trusted proxy networks (" + strings.Join(overlaps, "; ") + "): a proxy's address is exempt.",
		Hint: "ratescope never exempts a caller whose address could not be read through the proxies as configured (it falls back to a proxy's address), " +
			"but an exempt network that holds the proxies is usually a mistake: exempt the office's own networks, not the load balancers'.",
	}, true
}

func proxiesUnset() Message {
	return Message{ID: idProxiesUnset, Level: Warning, Text: "the number of proxies is not set.", Hint: hintProxies}
}

func splitJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, splitJoined(e)...)
		}
		return out
	}
	return []error{err}
}

// Run checks cfg, the configuration of a Limiter, and its store, and
// returns what it finds: W601 if neither the number of proxies nor the
// trusted proxies is set, W602 if the store is not shared between
// processes, W603 if the store cannot be reached within two seconds (or
// before ctx ends, or the store's own bound: the Redis store's Ping), W610
// for scopes in shadow mode, W611 for trusted proxies that are unused,
// W613 for exempt networks that hold proxies, and the warnings of a store
// that checks itself: W604 to W607 for the Redis store. A store that cannot
// be reached is asked for its warnings with a context that has ended, so
// that Run does not wait for it twice.
//
// Pass lim.Config() at startup, or a configuration before [core.New] is
// called: for a configuration core.New rejects, Run returns an error for
// each problem under its E id (E001 for an invalid rate or rate key, and
// so on) and the warnings of the configuration alone, without asking the
// store.
func Run(ctx context.Context, cfg core.Config) []Message {
	if err := cfg.Validate(); err != nil {
		return append(configErrors(err), configMessages(cfg)...)
	}
	msgs := configMessages(cfg)
	if s, ok := cfg.Store.(interface{ Shared() bool }); ok && !s.Shared() {
		msgs = append(msgs, Message{
			ID:    idStoreNotShared,
			Level: Warning,
			Text:  fmt.Sprintf("counts are kept in this process's memory (%T), not shared between processes.", cfg.Store),
			Hint:  "Fine for development or a single process. With several processes each caller gets its limits once per process: use the Redis store.",
		})
	}
	if p, ok := cfg.Store.(interface{ Ping(context.Context) error }); ok {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := p.Ping(pctx)
		cancel()
		if err != nil {
			msgs = append(msgs, Message{
				ID:    idStoreUnreachable,
				Level: Warning,
				Text:  "the rate limit store cannot be reached: " + err.Error() + ".",
				Hint:  "Until it can, requests are allowed and not counted (fail open). Check the store's address and that it is running.",
			})
			// Its settings cannot be read either: the store reports only
			// what it finds without calling, and start-up waits no more.
			done, cancel := context.WithCancel(ctx)
			cancel()
			return append(msgs, storeWarnings(done, cfg.Store)...)
		}
	}
	return append(msgs, storeWarnings(ctx, cfg.Store)...)
}

// configErrors returns an error message for each problem of err, the
// error of core.Config.Validate, under its E id.
func configErrors(err error) []Message {
	var msgs []Message
	for _, e := range splitJoined(err) {
		id, text := "ratescope.E001", e.Error()
		var ce *core.ConfigError
		if errors.As(e, &ce) {
			id, text = ce.ID, ce.Err.Error()
		}
		msgs = append(msgs, Message{
			ID:    id,
			Level: Error,
			Text:  "invalid rate limit configuration: " + text + ".",
			Hint:  configHints[id],
		})
	}
	return msgs
}

// Options says which messages to report and which fail. The zero Options
// reports every message and fails on errors only.
type Options struct {
	// Silence lists ids not to report, such as "ratescope.W602" in
	// development.
	Silence []string
	// Strict makes warnings fail as errors do: for tests and CI, so that
	// a deployment problem stops the build. Default: false.
	Strict bool
}

// Filter returns msgs without the silenced ids, and an error that lists the
// ids of those that fail: errors, and warnings too when Strict. The error
// is nil when none fails.
func (o Options) Filter(msgs []Message) ([]Message, error) {
	var kept []Message
	var failing []string
	for _, m := range msgs {
		if slices.Contains(o.Silence, m.ID) {
			continue
		}
		kept = append(kept, m)
		if m.Level == Error || o.Strict {
			failing = append(failing, m.ID+" "+m.Text)
		}
	}
	if len(failing) > 0 {
		return kept, fmt.Errorf("checks: %d failed: %s", len(failing), strings.Join(failing, "; "))
	}
	return kept, nil
}

// Log logs msgs to logger: warnings at level Warn, errors at level Error,
// with "ratescope: " and the text as message and the attributes "id" and
// "hint". The record's own level says whether it is a warning or an error:
// no attribute repeats it, since one named "level" would collide with
// slog's key in JSON and text logs.
func Log(ctx context.Context, logger *slog.Logger, msgs []Message) {
	for _, m := range msgs {
		level := slog.LevelWarn
		if m.Level == Error {
			level = slog.LevelError
		}
		logger.LogAttrs(ctx, level, "ratescope: "+m.Text,
			slog.String("id", m.ID), slog.String("hint", m.Hint))
	}
}

// A probe is a request that [ClientIP] asks both ratescope and the web
// framework about.
type probe struct {
	// Peer is the address the request comes from, as in
	// http.Request.RemoteAddr.
	Peer string
	// ForwardedFor is its X-Forwarded-For header, or "".
	ForwardedFor string
}

// probes are requests where the usual settings disagree: straight from a
// public address (IPv4 and IPv6) with a forged header, and from private (proxy) addresses
// with a header holding a forged entry and the caller.
var probes = []probe{
	{Peer: "203.0.113.10:40000", ForwardedFor: "198.51.100.20"},
	{Peer: "[2001:db8::10]:40000", ForwardedFor: "198.51.100.20"},
	{Peer: "10.0.0.1:40000", ForwardedFor: "198.51.100.20, 192.0.2.30"},
	{Peer: "127.0.0.1:40000", ForwardedFor: "198.51.100.20, 192.0.2.30"},
	{Peer: "192.168.0.1:40000", ForwardedFor: "198.51.100.20, 192.0.2.30"},
}

// ClientIP reports W612 when the web framework's own idea of the client's
// address (clientIP: Gin's ClientIP, Echo's RealIP, for a request) differs
// from the address lim counts, for the requests of a few probes: from a
// public address with a forged X-Forwarded-For, and from private addresses
// through a proxy, plus an address of each of lim's trusted networks. The
// framework names it in the message. Code that uses the framework's
// address (logs, other limits) then sees another caller than ratescope
// does. ginlimit.CheckClientIP, echolimit.CheckClientIP and
// echo5limit.CheckClientIP call it; an adapter for another framework calls
// it with that framework's function. Log the result with [Log].
func ClientIP(lim *core.Limiter, framework string, clientIP func(r *http.Request) string) []Message {
	ps := slices.Clone(probes)
	for _, n := range lim.Config().TrustedProxies {
		ps = append(ps, probe{Peer: netip.AddrPortFrom(n.Addr(), 40000).String(), ForwardedFor: "198.51.100.20, 192.0.2.30"})
	}
	for _, p := range ps {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = p.Peer
		if p.ForwardedFor != "" {
			r.Header.Set("X-Forwarded-For", p.ForwardedFor)
		}
		theirs := clientIP(r)
		// The framework's address is ratescope's caller if ratescope
		// counts it there: the same IPv4 address, or an IPv6 address in
		// the network (/64 by default) it counts.
		counted := lim.Caller(r, core.Caller{}).Network()
		ours := counted.Addr().String()
		if a, err := netip.ParseAddr(theirs); err != nil || !counted.Contains(a.Unmap()) {
			return []Message{{
				ID:    idClientIPDiffers,
				Level: Warning,
				Text: fmt.Sprintf("%s's client address differs from ratescope's: for a request from %s with X-Forwarded-For %q, %s says %s and ratescope counts %s.",
					framework, p.Peer, p.ForwardedFor, framework, theirs, ours),
				Hint: "Make the two agree, so that logs and other middleware see the caller ratescope counts: tell " + framework +
					" the same proxies (Gin: engine.SetTrustedProxies; Echo: e.IPExtractor with echo.TrustIPRange) as NumProxies and TrustedProxies say. Silence the id if nothing reads the framework's address.",
			}}
		}
	}
	return nil
}
