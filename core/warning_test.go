package core_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
)

func TestWarnJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		load bool
		v    any
		want string
	}{
		{name: "no load", load: false, v: map[string]int{"id": 1}, want: `{"id":1}`},
		{name: "load", load: true, v: map[string]int{"id": 1}, want: `{"warning":"load","id":1}`},
		{name: "empty object", load: true, v: struct{}{}, want: `{"warning":"load"}`},
		{name: "json-rpc result", load: false, v: map[string]any{"result": core.WarnJSON(true, map[string]string{"status": "success"})}, want: `{"result":{"warning":"load","status":"success"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(core.WarnJSON(tc.load, tc.v))
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(b))
		})
	}
	_, err := json.Marshal(core.WarnJSON(true, []int{1}))
	assert.ErrorContains(t, err, "JSON object")
}

func TestLoadWarningHeader(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{Scopes: []core.Scope{{Name: "api", Anon: []core.Rate{core.PerMinute(10)}, User: []core.Rate{core.PerMinute(10)}}}})
	g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
	require.NoError(t, err)
	var got []string
	for range 10 {
		h := make(map[string][]string)
		g.Decide(context.Background(), anonCaller("192.0.2.1"), h)
		got = append(got, strings.Join(h[core.HeaderWarning], ","))
	}
	// 0.8 of 10: warned once fewer than 2 remain.
	assert.Equal(t, []string{"", "", "", "", "", "", "", "", "load", "load"}, got)
}
