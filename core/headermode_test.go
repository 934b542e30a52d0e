package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
)

func TestHeaderModeText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		text string
		want core.HeaderMode
		err  string
	}{
		{name: "all", text: "all", want: core.HeadersAll},
		{name: "refused", text: "refused", want: core.HeadersRefused},
		{name: "none", text: "none", want: core.HeadersNone},
		{name: "case and spaces", text: " Refused ", want: core.HeadersRefused},
		{name: "empty is the default", text: "", want: core.HeadersAll},
		{name: "unknown", text: "some", err: `header policy "some": want all, refused or none`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got core.HeaderMode
			err := got.UnmarshalText([]byte(tc.text))
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			text, err := got.MarshalText()
			require.NoError(t, err)
			var back core.HeaderMode
			require.NoError(t, back.UnmarshalText(text))
			assert.Equal(t, got, back, "round trip through %q", text)
		})
	}
}

func TestHeaderModeFlagAndJSON(t *testing.T) {
	t.Parallel()
	var m core.HeaderMode
	fs := flag.NewFlagSet("portal", flag.ContinueOnError)
	fs.TextVar(&m, "headers", m, "all|refused|none")
	require.NoError(t, fs.Parse([]string{"-headers", "none"}))
	assert.Equal(t, core.HeadersNone, m)
	assert.Error(t, fs.Parse([]string{"-headers", "never"}))

	var cfg struct{ Headers core.HeaderMode }
	require.NoError(t, json.Unmarshal([]byte(`{"Headers":"refused"}`), &cfg))
	assert.Equal(t, core.HeadersRefused, cfg.Headers)
	out, err := json.Marshal(cfg)
	require.NoError(t, err)
	assert.JSONEq(t, `{"Headers":"refused"}`, string(out))
	assert.Error(t, json.Unmarshal([]byte(`{"Headers":"sometimes"}`), &cfg))

	_, err = core.HeaderMode(9).MarshalText()
	assert.Error(t, err)
	assert.Equal(t, "HeaderMode(9)", core.HeaderMode(9).String())
}

func TestHeaderModeInvalid(t *testing.T) {
	t.Parallel()
	cfg := core.Config{Store: newLimiter(t, core.Config{}).Config().Store, Headers: core.HeaderMode(3)}
	_, err := core.New(cfg)
	require.Error(t, err)
	var ce *core.ConfigError
	require.True(t, errors.As(err, &ce), "want a ConfigError, got %v", err)
	assert.Equal(t, "ratescope.E003", ce.ID)
	assert.Contains(t, err.Error(), "Headers HeaderMode(3)")
	assert.Error(t, cfg.Validate())
}

// TestHeaderModes decides two allowed requests and a refused one, all
// with the load warning, under each policy, with the legacy fields on, and
// checks which fields each response carries.
func TestHeaderModes(t *testing.T) {
	t.Parallel()
	all := []string{"Ratelimit-Policy", "Ratelimit", "Ratescope-Warning", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"}
	for _, tc := range []struct {
		name    string
		mode    core.HeaderMode
		shadow  bool
		served  []string // fields of the first two (served) responses
		refused []string // fields of the third
	}{
		{name: "all", mode: core.HeadersAll, served: all, refused: append([]string{"Retry-After"}, all...)},
		{name: "refused", mode: core.HeadersRefused, refused: append([]string{"Retry-After"}, all...)},
		{name: "none", mode: core.HeadersNone, refused: []string{"Retry-After"}},
		{name: "refused in shadow mode", mode: core.HeadersRefused, shadow: true},
		{name: "all in shadow mode", mode: core.HeadersAll, shadow: true, served: all, refused: all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cfg := core.Config{Rates: map[string]string{"api.anon": "2/min,100/day"}, LegacyHeaders: true, LoadRatio: 0.4, Headers: tc.mode}
			if tc.shadow {
				cfg.Scopes = shadowAPI()
			}
			lim := newLimiter(t, cfg)
			g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
			require.NoError(t, err)
			ip := anonCaller("192.0.2.7")
			for i, want := range [][]string{tc.served, tc.served, tc.refused} {
				h := http.Header{}
				d := g.Decide(ctx, ip, h)
				if i == 2 && !tc.shadow {
					require.False(t, d.Allowed)
				} else {
					require.True(t, d.Allowed, "request %d", i+1)
				}
				require.True(t, d.Load, "request %d: over 40%% of the minute's 2 used", i+1)
				var got []string
				for _, name := range append([]string{"Retry-After"}, all...) {
					if _, ok := h[name]; ok {
						got = append(got, name)
					}
				}
				assert.ElementsMatch(t, want, got, "request %d", i+1)
				if _, ok := h["Retry-After"]; ok {
					assert.Equal(t, "60", h.Get("Retry-After"))
				}
				assert.Len(t, h, len(got), "request %d: no other field: %v", i+1, h)
			}
		})
	}
}
