package liveview_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/liveview"
)

// TestLongIDsAreBounded: signed-in callers with ids of 256 KiB, refused
// twice each, cost the view what short ids do, the page and the JSON
// show each in a few bytes, and each is still reset from its row. It does
// not run in parallel, so that the heap it measures is its own.
func TestLongIDsAreBounded(t *testing.T) {
	const (
		callers = 100
		idLen   = 256 << 10
	)
	s := newSetup(t, liveview.Config{}, map[string]string{"api.user": "1/min"})
	s.view.AllowReset(s.lim)
	// id returns the id of caller i, made afresh each time, so that the
	// test keeps none alive.
	id := func(i int) string { return fmt.Sprintf("user-%03d-", i) + strings.Repeat("x", idLen) }

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range callers {
		s.allow(t, "api", s.user(id(i)), 3)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
	t.Logf("%d ids of %d bytes, refused twice each: the heap grew by %d bytes", callers, idLen, grown)
	assert.Less(t, grown, uint64(callers*idLen/10), "the ids are not kept: not a tenth of them")

	body := get(t, s.view, "/?format=json").Body.Bytes()
	assert.Less(t, len(body), idLen, "no id is served whole")
	assert.Less(t, len(get(t, s.view, "/").Body.String()), idLen)
	assert.Less(t, len(get(t, s.view, "/?format=main").Body.String()), idLen)
	var snap liveview.Snapshot
	require.NoError(t, json.Unmarshal(body, &snap))
	require.Len(t, snap.Refused, 20)
	for _, r := range snap.Refused {
		assert.Less(t, len(r.Caller), 100, r.Caller)
		assert.Less(t, len(r.Ref), 120, r.Ref)
		assert.Equal(t, "user", r.Kind)
	}
	row := snap.Refused[0]
	assert.Regexp(t, `^user-\d{3}-x{23}… \(262153 bytes, sha256:[0-9a-f]{16}\)$`, row.Caller)

	// Its reset waits for the caller's next refusal, when the view holds
	// the caller's value again.
	var n int
	_, err := fmt.Sscanf(row.Caller, "user-%03d-", &n)
	require.NoError(t, err)
	caller := s.user(id(n))
	s.clock.Advance(time.Second)
	w := post(s.view, token(t, s.view), "same-origin", "api", row.Ref)
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	snap = s.view.Snapshot()
	assert.True(t, snap.Refused[0].ResetPending, "pending")
	assert.Contains(t, get(t, s.view, "/").Body.String(), "reset at its next refusal")
	d, err := s.lim.Allow(context.Background(), "api", caller)
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeDenied, d.Outcome, "decided before the reset, which it makes")
	d, err = s.lim.Allow(context.Background(), "api", caller)
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeAllowed, d.Outcome, "reset")
	snap = s.view.Snapshot()
	assert.Equal(t, s.clock.Now(), snap.Refused[0].Reset)
	assert.False(t, snap.Refused[0].ResetPending)
	d, err = s.lim.Allow(context.Background(), "api", s.user(id((n+1)%callers)))
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeDenied, d.Outcome, "another caller is not reset")
}
