package ginlimit_test

import (
	"log/slog"
	"net/netip"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/ginlimit"
)

func TestCheckClientIP(t *testing.T) {
	t.Parallel()
	newLimiter := func(cfg core.Config) *core.Limiter {
		ms := memstore.New(memstore.Config{SweepInterval: -1})
		t.Cleanup(func() { _ = ms.Close() })
		cfg.Store, cfg.Logger = ms, slog.New(slog.DiscardHandler)
		lim, err := core.New(cfg)
		require.NoError(t, err)
		return lim
	}
	for _, tt := range []struct {
		name    string
		trusted []string // engine.SetTrustedProxies; nil: Gin's default, every proxy
		cfg     core.Config
		warn    bool
	}{
		{name: "Gin trusts every proxy", cfg: core.Config{NumProxies: new(1)}, warn: true},
		{name: "no proxy on both sides", trusted: []string{}, cfg: core.Config{NumProxies: new(0)}},
		{name: "same networks", trusted: []string{"10.0.0.0/8"}, cfg: core.Config{TrustedProxies: core.Networks{netip.MustParsePrefix("10.0.0.0/8")}}},
		{name: "same IPv6 networks", trusted: []string{"fd00::/8"}, cfg: core.Config{TrustedProxies: core.Networks{netip.MustParsePrefix("fd00::/8")}}},
		{name: "Gin trusts a proxy ratescope does not", trusted: []string{"10.0.0.0/8"}, cfg: core.Config{NumProxies: new(0)}, warn: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			engine := gin.New()
			if tt.trusted != nil {
				require.NoError(t, engine.SetTrustedProxies(tt.trusted))
			}
			msgs := ginlimit.CheckClientIP(engine, newLimiter(tt.cfg))
			if !tt.warn {
				assert.Empty(t, msgs)
				return
			}
			require.Len(t, msgs, 1)
			assert.Equal(t, "ratescope.W612", msgs[0].ID)
			assert.Contains(t, msgs[0].Text, "Gin says")
		})
	}
}
