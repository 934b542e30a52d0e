package portal_test

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/examples/portal/internal/portal"
)

func TestParseRates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		spec    string
		want    map[string]string
		wantErr string
	}{
		{name: "empty", spec: "", want: map[string]string{}},
		{name: "two keys", spec: " api.anon=3/min,100/day  api.user=10/min ", want: map[string]string{"api.anon": "3/min,100/day", "api.user": "10/min"}},
		{name: "no equals sign", spec: "api.anon", wantErr: `"api.anon"`},
		{name: "empty value", spec: "api.anon=", wantErr: `"api.anon="`},
		{name: "twice", spec: "api.anon=1/min api.anon=2/min", wantErr: "api.anon given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := portal.ParseRates(tt.spec)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

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
	assert.False(t, o.NumProxies.IsSet())

	o, err = portal.ParseFlags(strings.Fields("-num-proxies 0 -redis= -framework echo -admins root,,ops"), getenv, io.Discard)
	require.NoError(t, err)
	assert.True(t, o.NumProxies.IsSet())
	assert.Equal(t, 0, o.NumProxies.N())
	assert.Empty(t, o.RedisURL)
	assert.Equal(t, "echo", o.Framework)
	assert.Equal(t, []string{"root", "ops"}, o.Admins)

	_, err = portal.ParseFlags([]string{"-rates", "api.anon"}, getenv, io.Discard)
	var ue *portal.UsageError
	require.ErrorAs(t, err, &ue)
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
