package echo5limit_test

import (
	"log/slog"
	"net"
	"net/netip"
	"testing"

	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/echo5limit"
)

// tenOnly trusts 10.0.0.0/8 and nothing else, as TrustedProxies does.
var tenOnly = echo.ExtractIPFromXFFHeader(echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false),
	echo.TrustIPRange(&net.IPNet{IP: net.IPv4(10, 0, 0, 0), Mask: net.CIDRMask(8, 32)}))

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
		extract echo.IPExtractor // nil: Echo v5's default, the peer address (X-Forwarded-For ignored since v5.1)
		cfg     core.Config
		warn    bool
	}{
		{name: "Echo v5's default counts the proxy", cfg: core.Config{NumProxies: new(1)}, warn: true},
		{name: "Echo v5's default counts the proxy of a trusted network", cfg: core.Config{TrustedProxies: core.Networks{netip.MustParsePrefix("10.0.0.0/8")}}, warn: true},
		{name: "Echo v5's default with no proxy", cfg: core.Config{NumProxies: new(0)}},
		{name: "the legacy extractor believes the header", extract: echo.LegacyIPExtractor(), cfg: core.Config{NumProxies: new(0)}, warn: true},
		{name: "no proxy on both sides", extract: echo.ExtractIPDirect(), cfg: core.Config{NumProxies: new(0)}},
		{name: "same networks", extract: tenOnly, cfg: core.Config{TrustedProxies: core.Networks{netip.MustParsePrefix("10.0.0.0/8")}}},
		{name: "Echo trusts private networks ratescope does not", extract: echo.ExtractIPFromXFFHeader(), cfg: core.Config{TrustedProxies: core.Networks{netip.MustParsePrefix("10.0.0.0/8")}}, warn: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := echo.New()
			e.IPExtractor = tt.extract
			msgs := echo5limit.CheckClientIP(e, newLimiter(tt.cfg))
			if !tt.warn {
				assert.Empty(t, msgs)
				return
			}
			require.Len(t, msgs, 1)
			assert.Equal(t, "ratescope.W612", msgs[0].ID)
			assert.Contains(t, msgs[0].Text, "Echo v5 says")
		})
	}
}
