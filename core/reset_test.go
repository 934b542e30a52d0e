package core_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// TestReset checks that Limiter.Reset frees a blocked caller of a window
// scope, and only it, and that the hook sees the reset.
func TestReset(t *testing.T) {
	t.Parallel()
	var seen []core.Event
	lim := newLimiter(t, core.Config{
		Rates:   core.RateTable{"api.anon": "3/min,100/day", "api.user": "5/min"},
		Observe: func(_ context.Context, e core.Event) { seen = append(seen, e) },
	})
	ctx := context.Background()
	blocked, other, user := anonCaller("192.0.2.1"), anonCaller("192.0.2.2"), core.UserCaller("alice")
	for _, c := range []core.Caller{blocked, blocked, blocked, other, user} {
		d, err := lim.Allow(ctx, "api", c)
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	d, err := lim.Allow(ctx, "api", blocked)
	require.NoError(t, err)
	require.False(t, d.Allowed)

	seen = nil
	require.NoError(t, lim.Reset(ctx, "api", blocked))
	require.Len(t, seen, 1)
	e := seen[0]
	assert.Equal(t, core.OutcomeReset, e.Outcome)
	assert.Equal(t, "api", e.Scope)
	assert.Equal(t, blocked, e.Caller)
	assert.Zero(t, e.Cost)
	assert.NotNil(t, e.Decision, "a window scope's reset comes as a Decision")

	for _, tc := range []struct {
		name   string
		caller core.Caller
		want   []int64
	}{
		{name: "the caller reset has the whole limit less one", caller: blocked, want: []int64{2, 99}},
		{name: "another caller keeps its count", caller: other, want: []int64{1, 98}},
		{name: "a user keeps its count", caller: user, want: []int64{3}},
	} {
		d, err := lim.Allow(ctx, "api", tc.caller)
		require.NoError(t, err)
		var left []int64
		for _, st := range d.Limits() {
			left = append(left, st.Remaining)
		}
		assert.Equal(t, tc.want, left, tc.name)
	}
}

// TestResetAddrCaller checks that an address names the caller the
// limiter counts: an IPv4 address, mapped or not, itself; an IPv6 address
// its network of Config.IPv6Bits.
func TestResetAddrCaller(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		bits int
		addr string
		want string
	}{
		{name: "IPv4", addr: "192.0.2.7", want: "192.0.2.7"},
		{name: "IPv4-mapped", addr: "::ffff:192.0.2.7", want: "192.0.2.7"},
		{name: "IPv6 /64", addr: "2001:db8:1:2:3:4:5:6", want: "2001:db8:1:2::/64"},
		{name: "IPv6 /48", bits: 48, addr: "2001:db8:1:2:3:4:5:6", want: "2001:db8:1::/48"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lim := newLimiter(t, core.Config{IPv6Bits: tc.bits})
			assert.Equal(t, tc.want, lim.AddrCaller(netip.MustParseAddr(tc.addr)).String())
		})
	}
	lim := newLimiter(t, core.Config{})
	assert.Equal(t, core.Caller{}, lim.AddrCaller(netip.Addr{}), "an invalid address is the unknown caller")
}

// TestResetErrors checks the errors of Reset: an unknown scope, a store
// that cannot reset (which New accepts), a store that fails; none is
// observed.
func TestResetErrors(t *testing.T) {
	t.Parallel()
	observed := 0
	observe := func(context.Context, core.Event) { observed++ }
	ctx := context.Background()
	caller := anonCaller("192.0.2.1")

	lim := newLimiter(t, core.Config{Observe: observe})
	err := lim.Reset(ctx, "nope", caller)
	require.ErrorIs(t, err, core.ErrUnknownScope)
	assert.ErrorContains(t, err, `unknown scope "nope": the limiter's scopes are api`)

	_, err = lim.Allow(ctx, "nope", caller)
	assert.ErrorIs(t, err, core.ErrUnknownScope, "AllowN's unknown scope is the same error")

	broken := newLimiter(t, core.Config{Store: resetFails{}, Observe: observe})
	err = broken.Reset(ctx, "api", caller)
	require.ErrorIs(t, err, errResetDown)
	assert.ErrorContains(t, err, `ratescope: reset "192.0.2.1" in scope "api": store down`)
	assert.Zero(t, observed, "a failed reset is not observed")
}

// resetFails fails every call.
type resetFails struct{}

var errResetDown = errors.New("store down")

func (resetFails) Bind(string, core.Kind, []core.Rate) (core.Counter, error) {
	return storecall.Down(errResetDown).Bind("", 0, nil)
}

// TestResetUserNeverFreesKey is the third defect of issue 30: a user id
// that reads like the internal form of an API key resets that user, never
// the key.
func TestResetUserNeverFreesKey(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{Rates: core.RateTable{"api.anon": "1/min", "api.user": "1/min"}})
	ctx := context.Background()
	key := core.KeyCaller("K")
	for i, want := range []bool{true, false} {
		d, err := lim.Allow(ctx, "api", key)
		require.NoError(t, err)
		require.Equal(t, want, d.Allowed, "request %d of the key", i+1)
	}
	for _, id := range []string{"\x00key:K", "key:K", "K"} {
		require.NoError(t, lim.Reset(ctx, "api", core.UserCaller(id)))
		d, err := lim.Allow(ctx, "api", key)
		require.NoError(t, err)
		assert.False(t, d.Allowed, "resetting user %q freed key K", id)
	}
	require.NoError(t, lim.Reset(ctx, "api", key))
	d, err := lim.Allow(ctx, "api", key)
	require.NoError(t, err)
	assert.True(t, d.Allowed, "resetting the key frees it")
}
