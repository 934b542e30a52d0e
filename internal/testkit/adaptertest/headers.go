package adaptertest

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
)

// rateLimitFields are the fields a header policy ([core.HeaderMode])
// governs, with LegacyHeaders on: all of them but Retry-After.
var rateLimitFields = []string{"Ratelimit-Policy", "Ratelimit", "Ratescope-Warning", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"}

// testHeaderModes sends three served requests (the third with the load
// warning) and a refused one under each header policy, with the legacy
// fields on: the served ones carry every field under "all" and none
// otherwise; the refusal is 429 with Retry-After and its JSON body under
// every policy, and the other fields unless the policy is "none".
func testHeaderModes(t *testing.T, build builder) {
	for _, tc := range []struct {
		mode           core.HeaderMode
		served, denied bool // whether served and refused responses carry the fields
	}{
		{mode: core.HeadersAll, served: true, denied: true},
		{mode: core.HeadersRefused, denied: true},
		{mode: core.HeadersNone},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			t.Parallel()
			a := newAppWith(t, build, nil, func(c *core.Config) {
				c.Headers, c.LegacyHeaders = tc.mode, true
			}, Options{})
			for i := range 3 {
				w := a.get("192.0.2.1:1234", nil)
				require.Equal(t, http.StatusOK, w.Code, "request %d", i+1)
				assert.Empty(t, w.Header().Values("Retry-After"), "request %d", i+1)
				for _, f := range rateLimitFields {
					if f == "Ratescope-Warning" && i < 2 {
						continue // below the load ratio
					}
					assert.Equal(t, tc.served, len(w.Header().Values(f)) == 1, "request %d, %s: %v", i+1, f, w.Header())
				}
				assert.True(t, a.last().Checked, "the decision is the same under every policy")
			}
			assert.True(t, a.last().Load)

			w := a.get("192.0.2.1:1234", nil)
			require.Equal(t, http.StatusTooManyRequests, w.Code)
			assert.Equal(t, "60", w.Header().Get("Retry-After"), "Retry-After on a refusal whatever the policy")
			var body core.DenyBody
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
			assert.Equal(t, int64(60), body.RetryAfter)
			for _, f := range rateLimitFields {
				assert.Equal(t, tc.denied, len(w.Header().Values(f)) == 1, "refused, %s: %v", f, w.Header())
			}
			if tc.denied {
				assert.Equal(t, anonPolicy, w.Header().Get("Ratelimit-Policy"))
				assert.Contains(t, w.Header().Get("Ratelimit"), `"api.anon.min";r=0;t=60`)
			}
			assert.Equal(t, 3, a.served(), "the refused request never reaches the handler")
		})
	}
}
