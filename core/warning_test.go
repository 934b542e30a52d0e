package core_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
)

func TestLoadWarningHeader(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{Scopes: []core.Scope{{Name: "api", Anon: []core.Rate{core.PerMinute(10)}, User: []core.Rate{core.PerMinute(10)}}}})
	g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
	require.NoError(t, err)
	var got []string
	for range 10 {
		h := make(map[string][]string)
		g.Decide(context.Background(), anonCaller("192.0.2.1"), h)
		got = append(got, strings.Join(h["Ratescope-Warning"], ","))
	}
	// 0.8 of 10: warned once fewer than 2 remain.
	assert.Equal(t, []string{"", "", "", "", "", "", "", "", "load", "load"}, got)
}
