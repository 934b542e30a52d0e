package portal_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/examples/portal/internal/portal"
)

// TestResetDispatches checks that App.Reset, which the admin route and
// the live view's buttons call, clears a balance of the ledger through its
// guard and a window of another scope through the limiter, and that an
// unknown scope is core.ErrUnknownScope.
func TestResetDispatches(t *testing.T) {
	t.Parallel()
	o, err := portal.ParseFlags([]string{"-num-proxies", "0", "-warn", "100", "-drop", "150"}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	a, err := portal.New(o, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer a.Close()
	rpc := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/rpc", strings.NewReader(`{"method":"path_find"}`))
		r.RemoteAddr = "192.0.2.1:1234"
		w := httptest.NewRecorder()
		if d, ok := a.ChargeRPC(w, r, ""); ok {
			w.WriteHeader(http.StatusOK)
			assert.True(t, d.Allowed)
		}
		return w
	}
	codes := []int{}
	for range 3 {
		codes = append(codes, rpc().Code)
	}
	assert.Equal(t, []int{200, 200, 503}, codes, "warned at the second heavy call, dropped at the third")
	w := rpc()
	assert.Equal(t, "Server is overloaded", w.Body.String())
	caller := a.Limiter.AddrCaller(netip.MustParseAddr("192.0.2.1"))
	ctx := context.Background()
	require.NoError(t, a.Reset(ctx, portal.ScopeLedger, caller))
	assert.Equal(t, http.StatusOK, rpc().Code, "the balance is gone")
	require.NoError(t, a.Reset(ctx, portal.ScopeAPI, caller), "a window scope")
	assert.ErrorIs(t, a.Reset(ctx, "nope", caller), core.ErrUnknownScope)
}
