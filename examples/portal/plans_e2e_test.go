package main_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/internal/testkit/redistest"
)

const (
	userPolicy = `"api.user.min";q=2;w=60, "api.user.day";q=1000;w=86400`
	goldPolicy = `"api.user.min";q=4;w=60, "api.user.day";q=2000;w=86400`
)

// TestPlans: the users -plan-users names get their plan's limits, and
// RateLimit-Policy shows them; the other signed-in users keep api.user.
func TestPlans(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			p := start(t, "-framework", fw, "-num-proxies", "0",
				"-rates", "api.user=2/min,1000/day api.user@gold=4/min,2000/day", "-plan-users", "gold=alice,bob")
			for _, user := range []string{"alice", "bob"} {
				for i := range 4 {
					resp, body := p.get(t, "/api/records", user)
					require.Equal(t, http.StatusOK, resp.StatusCode, "%s on gold, request %d: %s", user, i+1, body)
					assert.Equal(t, goldPolicy, resp.Header.Get("RateLimit-Policy"))
					assert.Regexp(t, `"api.user.min";r=`+strconv.Itoa(3-i)+"(,|$)", resp.Header.Get("RateLimit"))
				}
				resp, _ := p.get(t, "/api/records", user)
				assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s over gold's 4/min", user)
				assert.Equal(t, goldPolicy, resp.Header.Get("RateLimit-Policy"))
				assert.NotEmpty(t, resp.Header.Get("Retry-After"))
			}
			for i := range 2 {
				resp, _ := p.get(t, "/api/records", "carol")
				require.Equal(t, http.StatusOK, resp.StatusCode, "carol, request %d", i+1)
				assert.Equal(t, userPolicy, resp.Header.Get("RateLimit-Policy"))
			}
			resp, _ := p.get(t, "/api/records", "carol")
			assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "carol has no plan: api.user's 2/min")
		})
	}
}

// TestPlanChangeKeepsTheCount runs two portals on one Redis: on the first
// alice is on gold, on the second she has api.user's rates, as before and
// after a change of plan. Her count is one.
func TestPlanChangeKeepsTheCount(t *testing.T) {
	t.Parallel()
	srv := redistest.ServerFor(t)
	redis := "redis://" + srv.Addr + "/0"
	gold := start(t, "-framework", "gin", "-num-proxies", "0", "-redis", redis,
		"-rates", "api.user=2/min,1000/day api.user@gold=4/min,2000/day", "-plan-users", "gold=alice")
	base := start(t, "-framework", "echo", "-num-proxies", "0", "-redis", redis,
		"-rates", "api.user=2/min,1000/day")
	for range 2 {
		resp, _ := gold.get(t, "/api/records", "alice")
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	resp, _ := base.get(t, "/api/records", "alice")
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "without gold, the 2 requests made on it count")
	assert.Equal(t, userPolicy, resp.Header.Get("RateLimit-Policy"))
	resp, _ = gold.get(t, "/api/records", "alice")
	require.Equal(t, http.StatusOK, resp.StatusCode, "back on gold: 3 of 4")
	assert.Regexp(t, `"api.user.min";r=1(,|$)`, resp.Header.Get("RateLimit"))
	assert.Regexp(t, `"api.user.day";r=1997(,|$)`, resp.Header.Get("RateLimit"))
}

func TestPlanArguments(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		want string // in the message on stderr
	}{
		{name: "plan without rates", args: []string{"-plan-users", "gold=alice"}, want: `-plan-users: plan "gold" has no rates: add api.user@gold=RATE[,RATE...] to -rates`},
		{name: "rates without users", args: []string{"-rates", "api.user@gold=10/min,1000/day"}, want: `-rates: plan "gold" (api.user@gold) has no users`},
		{name: "other plan without rates", args: []string{"-rates", "api.user@gold=10/min,1000/day", "-plan-users", "gold=alice;silver=bob"}, want: `plan "silver" has no rates`},
		{name: "no users", args: []string{"-plan-users", "gold="}, want: `"gold=": want PLAN=NAME[,NAME...]`},
		{name: "user on two plans", args: []string{"-rates", "api.user@gold=10/min,1000/day api.user@silver=5/min,1000/day", "-plan-users", "gold=alice;silver=alice"}, want: `user "alice" is on two plans`},
		{name: "other scope", args: []string{"-rates", "autocomplete.tag.user@gold=10/min,1000/day", "-plan-users", "gold=alice"}, want: "autocomplete.tag.user@gold: the portal gives plans in scope api only"},
		{name: "anonymous plan", args: []string{"-rates", "api.anon@gold=10/min,1000/day", "-plan-users", "gold=alice"}, want: "plans are for signed-in users only"},
		{name: "other periods", args: []string{"-rates", "api.user@gold=10/min,1000/hour", "-plan-users", "gold=alice"}, want: "api.user@gold: its periods (min,hour) are not those of api.user (min,day)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, portalBin, append([]string{"-addr", "127.0.0.1:0"}, tt.args...)...)
			cmd.Env = portalEnv()
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "want an exit status, got %v; stderr:\n%s", err, &stderr)
			assert.Equal(t, 2, exit.ExitCode(), "%s", &stderr)
			assert.Contains(t, stderr.String(), tt.want)
		})
	}
}
