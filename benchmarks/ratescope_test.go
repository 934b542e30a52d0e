package benchmarks_test

import (
	"testing"

	"github.com/ratescope/ratescope/benchmarks"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
)

// newRatescope returns a limiter enforcing n a minute and n a day on
// anonymous callers counted by peer address, with a memory store that the
// test closes.
func newRatescope(tb testing.TB, n int) *core.Limiter {
	st := memstore.New(memstore.Config{})
	tb.Cleanup(func() { st.Close() })
	return newRatescopeWith(tb, st, core.PerMinute(int64(n)), core.PerDay(int64(n)))
}

// newRatescopeWith returns a limiter of scope "api" with the given
// anonymous rates on store st.
func newRatescopeWith(tb testing.TB, st core.Store, anon ...core.Rate) *core.Limiter {
	return newRatescopeFrom(tb, ratescopeConfig(st, anon...))
}

// ratescopeConfig configures scope "api" with the given anonymous rates on
// store st, with no proxy in front.
func ratescopeConfig(st core.Store, anon ...core.Rate) core.Config {
	return core.Config{
		Store: st,
		Scopes: []core.Scope{{
			Name: "api",
			Anon: anon,
			User: []core.Rate{core.PerMinute(benchmarks.Limit), core.PerDay(benchmarks.Limit)},
		}},
		NumProxies: new(0),
	}
}

func newRatescopeFrom(tb testing.TB, cfg core.Config) *core.Limiter {
	lim, err := core.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return lim
}
