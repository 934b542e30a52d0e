// Package checks runs ratescope's startup checks: problems in a deployment
// that no request would reveal until the limits fail to protect the API.
//
// A check returns [Message] values, each with an id (ratescope.W601), a
// level, a text and a hint, printed on one line so a log stays readable.
// Call [Log] once at startup:
//
//	lim, err := core.New(cfg)
//	...
//	checks.Log(ctx, slog.Default(), lim)
//
// # The checks
//
//   - ratescope.E001: the configuration is invalid (bad rate, unknown
//     scope key); see [Config].
//   - ratescope.W601: the number of proxies is not set (Config.NumProxies).
//   - ratescope.W602: the store keeps counts in one process's memory, so
//     with several processes each caller gets its limits once per process.
//   - ratescope.W603: the store cannot be reached at startup; until it can,
//     requests are allowed and not counted (fail open).
//   - ratescope.W610 to W613: the store's own deployment lets callers
//     escape their counts: a Redis that evicts counts or refuses writes
//     when full, a client that ignores context deadlines, a cluster that
//     stops when one master fails (package redisstore, Store.CheckStore).
//
// A store takes part in W602 and W603 by having the methods Shared() bool
// and Ping(context.Context) error, and reports problems of its own by
// implementing [core.StoreChecker].
package checks

import (
	"context"
	"fmt"
	"log/slog"
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

// Message ids.
const (
	IDInvalidConfig    = "ratescope.E001"
	IDProxiesUnset     = "ratescope.W601"
	IDStoreNotShared   = "ratescope.W602"
	IDStoreUnreachable = "ratescope.W603"
)

// hintProxies explains both ways a wrong proxy count defeats the limits.
const hintProxies = "Set NumProxies to the number of reverse proxies or load balancers in front of the application. " +
	"Too high (or trusting the whole X-Forwarded-For header), and a caller who writes a new address in the header on every request is counted as a new caller each time, so no limit stops it. " +
	"Too low (or ignoring the header behind a proxy), and every caller is counted as the proxy, so one busy caller uses up everyone's allowance. " +
	"Until it is set, the peer address is used. Set 0 if the application faces the callers directly."

// Config checks a configuration before a Limiter is built: it returns E001
// for each problem [core.Config.Validate] finds (an invalid rate, a rate key
// that names no known scope or kind), and the messages of [Limiter] that
// need no limiter.
func Config(cfg core.Config) []Message {
	var msgs []Message
	if err := cfg.Validate(); err != nil {
		for _, e := range splitJoined(err) {
			msgs = append(msgs, Message{
				ID:    IDInvalidConfig,
				Level: Error,
				Text:  "invalid rate limit configuration: " + e.Error() + ".",
				Hint:  "Rates are written N/PERIOD (60/min, 1000/day, 100/15m) and keyed SCOPE.anon or SCOPE.user.",
			})
		}
	}
	if !cfg.NumProxies.IsSet() {
		msgs = append(msgs, proxiesUnset())
	}
	return msgs
}

func proxiesUnset() Message {
	return Message{ID: IDProxiesUnset, Level: Warning, Text: "the number of proxies is not set.", Hint: hintProxies}
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

// Limiter checks a built Limiter: W601 if the number of proxies is not set,
// W602 if its store is not shared between processes, W603 if its store
// cannot be reached within two seconds (or before ctx ends), and the
// warnings of a store that checks itself ([core.StoreChecker]).
func Limiter(ctx context.Context, lim *core.Limiter) []Message {
	var msgs []Message
	cfg := lim.Config()
	if !cfg.NumProxies.IsSet() {
		msgs = append(msgs, proxiesUnset())
	}
	if s, ok := cfg.Store.(interface{ Shared() bool }); ok && !s.Shared() {
		msgs = append(msgs, Message{
			ID:    IDStoreNotShared,
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
				ID:    IDStoreUnreachable,
				Level: Warning,
				Text:  "the rate limit store cannot be reached: " + err.Error() + ".",
				Hint:  "Until it can, requests are allowed and not counted (fail open). Check the store's address and that it is running.",
			})
		}
	}
	return append(msgs, storeWarnings(ctx, cfg.Store)...)
}

// Log runs [Limiter] and logs each message on one line to logger: warnings
// at level Warn, errors at level Error, with the id as attribute "id". It
// returns the messages.
func Log(ctx context.Context, logger *slog.Logger, lim *core.Limiter) []Message {
	msgs := Limiter(ctx, lim)
	for _, m := range msgs {
		level := slog.LevelWarn
		if m.Level == Error {
			level = slog.LevelError
		}
		logger.LogAttrs(ctx, level, m.String(), slog.String("id", m.ID))
	}
	return msgs
}
