package portal_test

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/examples/portal/internal/portal"
)

func TestParseFlags(t *testing.T) {
	t.Parallel()
	getenv := func(k string) string {
		if k == "REDIS_URL" {
			return "redis://127.0.0.1:6379/0"
		}
		return ""
	}
	o, err := portal.ParseFlags(nil, getenv, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:8080", o.Addr)
	assert.Equal(t, "gin", o.Framework)
	assert.Equal(t, "redis://127.0.0.1:6379/0", o.RedisURL)
	assert.Nil(t, o.NumProxies)

	o, err = portal.ParseFlags(strings.Fields("-num-proxies 0 -redis= -framework echo -admins root,,ops"), getenv, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, new(0), o.NumProxies)
	assert.Empty(t, o.RedisURL)
	assert.Equal(t, "echo", o.Framework)
	assert.Equal(t, []string{"root", "ops"}, o.Admins)

	assert.Equal(t, int64(portal.DefaultExportCost), o.ExportCost)
	assert.False(t, o.Shadow)
	assert.Empty(t, o.Metrics, "no /metrics by default")

	o, err = portal.ParseFlags(strings.Fields("-shadow -metrics -trusted-proxies 10.0.0.0/8,192.0.2.7 -export-cost 3 -rates api.anon=3/min -rates api.user=4/min"), getenv, io.Discard)
	require.NoError(t, err)
	assert.True(t, o.Shadow)
	assert.Equal(t, portal.MetricsPrometheus, o.Metrics, "-metrics alone, as before it took a value")
	assert.Equal(t, "10.0.0.0/8,192.0.2.7/32", o.TrustedProxies.String())
	assert.Equal(t, int64(3), o.ExportCost)
	assert.Equal(t, core.RateTable{"api.anon": "3/min", "api.user": "4/min"}, o.Rates)

	for _, args := range [][]string{
		{"-rates", "api.anon"},
		{"-trusted-proxies", "nope"},
		{"-export-cost", "0"},
		{"-num-proxies", "-1"},
	} {
		_, err = portal.ParseFlags(args, getenv, io.Discard)
		var ue *portal.UsageError
		require.ErrorAs(t, err, &ue, "%v", args)
	}
}

func TestUserFromAuthorization(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header string
		want   string
	}{
		{header: "", want: ""},
		{header: "Bearer alice", want: "alice"},
		{header: "bearer  alice ", want: "alice"},
		{header: "Basic YWxpY2U6eA==", want: ""},
		{header: "Bearer", want: ""},
		{header: "Bearer ", want: ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, portal.UserFromAuthorization(tt.header), "header %q", tt.header)
	}
}

func FuzzUserFromAuthorization(f *testing.F) {
	for _, s := range []string{"", "Bearer alice", "Bearer  ", "Basic x", "bearer\tx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		user := portal.UserFromAuthorization(h)
		if user == "" {
			return
		}
		assert.Equal(t, strings.TrimSpace(user), user)
		assert.Contains(t, h, user)
		assert.True(t, strings.HasPrefix(strings.ToLower(strings.TrimSpace(h)), "bearer "))
	})
}

func TestLedgerFlagsAndCosts(t *testing.T) {
	t.Parallel()
	o, err := portal.ParseFlags([]string{"-warn", "100", "-drop", "300"}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, int64(100), o.Warn)
	assert.Equal(t, int64(300), o.Drop)
	a, err := portal.New(o, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer a.Close()
	s := a.Ledger()
	assert.Equal(t, int64(100), s.Warn)
	assert.Equal(t, int64(300), s.Drop)
	assert.Zero(t, s.WarnCost, "left for balance.New to scale with the thresholds: 2/5 of Warn")
	assert.Zero(t, s.DropCost, "and 1/5 of Drop")
	for cmd, cost := range map[string]int64{
		"ping": 20, "server_info": 20, "ledger": 400, "account_tx": 400,
		"path_find": 3000, "ripple_path_find": 3000, "subscribe": 100, "": 100,
	} {
		assert.Equal(t, cost, a.CommandCost(cmd), cmd)
	}
	for body, cost := range map[string]int64{`{"method":"ledger","params":[{}]}`: 400, `[1]`: 100, ``: 100} {
		r := httptest.NewRequest("POST", "/rpc", strings.NewReader(body))
		assert.Equal(t, cost, a.RPCCost(r), body)
		rest, _ := io.ReadAll(r.Body)
		assert.Equal(t, body, string(rest), "the body is put back")
	}
}

// TestLedgerWarnAboveDrop checks that -warn above -drop, which started
// silently and dropped callers that were never warned, is a usage error
// that names both flags (issue 34).
func TestLedgerWarnAboveDrop(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-warn", "20000", "-drop", "100"}, {"-warn", "20000"}} {
		o, err := portal.ParseFlags(args, func(string) string { return "" }, io.Discard)
		require.NoError(t, err)
		_, err = portal.New(o, slog.New(slog.DiscardHandler))
		var ue *portal.UsageError
		require.ErrorAs(t, err, &ue, "%v", args)
		assert.ErrorContains(t, err, "-warn 20000, -drop ")
		assert.ErrorContains(t, err, "Warn 20000 is above Drop ")
	}
}

// TestContractFlags checks that the command lines the contract and the
// usage text show are accepted and build a portal: long units, the scope
// login, a plan, -fail-closed login, and -metrics otel|prometheus.
func TestContractFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-rates", "api.anon=3/minutes,100/days"},
		{"-rates", "api.anon=3/min,100/day autocomplete.project.user=10/minutes,1000/days"},
		{"-rates", "login.anon=3/min", "-fail-closed", "login,api"},
		{"-plan-users", "gold=alice,bob", "-rates", "api.user@gold=10/min,1000/day"},
		{"-exempt-networks", "198.51.100.0/24,2001:db8::/32", "-admin-token", "s3cret", "-headers", "refused"},
		{"-metrics", "otel"},
		{"-metrics", "prometheus"},
		{"-metrics"},
	} {
		o, err := portal.ParseFlags(args, func(string) string { return "" }, io.Discard)
		require.NoError(t, err, "%q", args)
		a, err := portal.New(o, slog.New(slog.DiscardHandler))
		require.NoError(t, err, "%q", args)
		require.NoError(t, a.Close())
	}
}

func TestMetricsFlag(t *testing.T) {
	t.Parallel()
	getenv := func(string) string { return "" }
	for _, tt := range []struct {
		name string
		args string
		want string
	}{
		{name: "unset", args: "-shadow", want: ""},
		{name: "alone", args: "-metrics -shadow", want: portal.MetricsPrometheus},
		{name: "alone last", args: "-shadow -metrics", want: portal.MetricsPrometheus},
		{name: "prometheus", args: "-metrics prometheus -shadow", want: portal.MetricsPrometheus},
		{name: "otel", args: "-metrics otel -shadow", want: portal.MetricsOTel},
		{name: "otel with =", args: "-metrics=otel -shadow", want: portal.MetricsOTel},
		{name: "two dashes", args: "--metrics otel", want: portal.MetricsOTel},
		{name: "false", args: "-metrics=false", want: ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, err := portal.ParseFlags(strings.Fields(tt.args), getenv, io.Discard)
			require.NoError(t, err)
			assert.Equal(t, tt.want, o.Metrics)
			assert.Equal(t, strings.Contains(tt.args, "-shadow"), o.Shadow, "the flags after -metrics are read")
		})
	}
	for _, args := range []string{"-metrics=statsd", "-metrics otel extra", "-metrics statsd"} {
		_, err := portal.ParseFlags(strings.Fields(args), getenv, io.Discard)
		var ue *portal.UsageError
		require.ErrorAs(t, err, &ue, args)
	}
}
