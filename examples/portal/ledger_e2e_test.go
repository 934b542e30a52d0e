package main_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/internal/testkit/redistest"
)

// dialWS opens a WebSocket to the portal's /ws, signed in as user unless
// user is "".
func (p *process) dialWS(t *testing.T, user string) *websocket.Conn {
	t.Helper()
	h := http.Header{}
	if user != "" {
		h.Set("Authorization", "Bearer "+user)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(p.url, "http")+"/ws", &websocket.DialOptions{HTTPHeader: h})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

// command sends {"id":id,"command":name} and returns the reply, or the
// error that ended the connection.
func command(t *testing.T, c *websocket.Conn, id int, name string) (map[string]any, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg, err := json.Marshal(map[string]any{"id": id, "command": name})
	require.NoError(t, err)
	if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
		return nil, err
	}
	typ, b, err := c.Read(ctx)
	if err != nil {
		return nil, err
	}
	require.Equal(t, websocket.MessageText, typ)
	var reply map[string]any
	require.NoError(t, json.Unmarshal(b, &reply), "%s", b)
	return reply, nil
}

// hammerWS sends heavy commands until the portal closes the connection,
// checking every reply, and returns how many replies carried the warning
// and the close error. The warning is on at most one reply a second, not
// on every reply.
func hammerWS(t *testing.T, c *websocket.Conn) (warned int, closeErr websocket.CloseError) {
	t.Helper()
	start := time.Now()
	for id := 1; id <= 2000; id++ {
		reply, err := command(t, c, id, "path_find")
		if err != nil {
			require.ErrorAs(t, err, &closeErr, "the connection ends with a close frame")
			assert.LessOrEqual(t, warned, int(time.Since(start)/time.Second)+1, "at most one warning a second")
			return warned, closeErr
		}
		want := map[string]any{"id": float64(id), "type": "response", "status": "success", "result": map[string]any{}}
		if reply["warning"] != nil {
			warned++
			want["warning"] = "load"
		}
		require.Equal(t, want, reply)
	}
	t.Fatal("never dropped")
	return 0, closeErr
}

func dropLines(p *process, who string) int {
	return strings.Count(p.stderr.String(), "Consumer entry "+who+" dropped with balance ")
}

func TestWebSocketWarnThenDrop(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			p := start(t, "-framework", fw, "-num-proxies", "0", "-admins", "root")

			// Cheap commands: no warning.
			c := p.dialWS(t, "")
			for id := 1; id <= 20; id++ {
				reply, err := command(t, c, id, "ping")
				require.NoError(t, err)
				assert.Equal(t, map[string]any{"id": float64(id), "type": "response", "status": "success", "result": map[string]any{}}, reply)
			}
			// Heavy ones: warned, then closed with 1008.
			warned, ce := hammerWS(t, c)
			assert.Positive(t, warned, "warned before the drop")
			assert.Equal(t, websocket.StatusPolicyViolation, ce.Code)
			assert.Equal(t, "threshold exceeded", ce.Reason)
			require.Eventually(t, func() bool { return dropLines(p, "127.0.0.1") == 1 }, 5*time.Second, 10*time.Millisecond)
			assert.Regexp(t, `level=WARN msg="Consumer entry 127\.0\.0\.1 dropped with balance 1[5-9]\d{3} at or above drop threshold 15000" caller=127\.0\.0\.1 balance=1[5-9]\d{3} threshold=15000`, p.stderr.String())

			// Reconnecting is no way back in: the first message is
			// refused, and the drop is not logged again.
			_, err := command(t, p.dialWS(t, ""), 1, "ping")
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, websocket.StatusPolicyViolation, ce.Code)
			assert.Equal(t, 1, dropLines(p, "127.0.0.1"))

			// A signed-in user has a balance of its own; an admin is
			// never charged, warned or dropped.
			reply, err := command(t, p.dialWS(t, "alice"), 1, "ping")
			require.NoError(t, err)
			assert.Nil(t, reply["warning"])
			admin := p.dialWS(t, "root")
			for id := 1; id <= 400; id++ {
				reply, err := command(t, admin, id, "ripple_path_find")
				require.NoError(t, err, "admin message %d", id)
				require.Nil(t, reply["warning"], "admin message %d", id)
			}
			assert.Zero(t, dropLines(p, "root"))
			assert.Equal(t, 1, dropLines(p, "127.0.0.1"), "one line per drop, no more")
		})
	}
}

// rpc posts body to /rpc, signed in as user unless "".
func (p *process) rpc(t *testing.T, user, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.url+"/rpc", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+user)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func TestRPCWarnThenOverloaded(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			// Lower thresholds: -warn and -drop apply.
			p := start(t, "-framework", fw, "-num-proxies", "0", "-admins", "root", "-warn", "1000", "-drop", "3000")
			resp, body := p.rpc(t, "", `{"method":"server_info","params":[{}]}`)
			require.Equal(t, http.StatusOK, resp.StatusCode, body)
			assert.JSONEq(t, `{"result":{"status":"success"}}`, body)

			warned := 0
			for i := 0; ; i++ {
				require.Less(t, i, 2000, "never refused")
				resp, body = p.rpc(t, "", `{"method":"ripple_path_find","params":[{}]}`)
				if resp.StatusCode != http.StatusOK {
					break
				}
				if strings.Contains(body, "warning") {
					warned++
					assert.JSONEq(t, `{"result":{"status":"success","warning":"load"}}`, body)
					assert.Equal(t, "load", resp.Header.Get("Ratescope-Warning"))
				} else {
					assert.JSONEq(t, `{"result":{"status":"success"}}`, body)
				}
			}
			assert.Positive(t, warned)
			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			assert.Equal(t, "Server is overloaded", body)
			assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain"), resp.Header.Get("Content-Type"))
			require.Eventually(t, func() bool { return dropLines(p, "127.0.0.1") == 1 }, 5*time.Second, 10*time.Millisecond)
			assert.Contains(t, p.stderr.String(), "at or above drop threshold 3000")

			// The refused attempts of a dropped caller log the drop no
			// more (before issue 18, one line each).
			for range 3 {
				resp, body = p.rpc(t, "", `{"method":"ping"}`)
				assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
				assert.Equal(t, "Server is overloaded", body)
			}
			assert.Equal(t, 1, dropLines(p, "127.0.0.1"))

			// /ws and /rpc share the caller's balance.
			_, err := command(t, p.dialWS(t, ""), 1, "ping")
			var ce websocket.CloseError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, websocket.StatusPolicyViolation, ce.Code)

			// Admins are never refused.
			for range 100 {
				resp, body = p.rpc(t, "root", `{"method":"path_find"}`)
				require.Equal(t, http.StatusOK, resp.StatusCode)
				require.JSONEq(t, `{"result":{"status":"success"}}`, body)
			}
			// Malformed bodies cost 100.
			resp, _ = p.rpc(t, "bob", `not json`)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
		})
	}
}

// TestLedgerRedis keeps the balances in Redis: Gin, Echo v4 and Echo v5
// portals share them, and every key expires.
func TestLedgerRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.ServerFor(t)
	args := []string{"-num-proxies", "0", "-warn", "500", "-drop", "1000", "-redis", "redis://" + srv.Addr + "/0"}
	g := start(t, append([]string{"-framework", "gin"}, args...)...)
	e := start(t, append([]string{"-framework", "echo"}, args...)...)
	e5 := start(t, append([]string{"-framework", "echo5"}, args...)...)

	// 1000*32 / 3000 ≈ 11 heavy commands (and a warning or two) to reach the
	// drop, sent to each in turn.
	var resp *http.Response
	var body string
	for i := 0; i < 100; i++ {
		resp, body = []*process{g, e, e5}[i%3].rpc(t, "carol", `{"method":"path_find"}`)
		if resp.StatusCode != http.StatusOK {
			break
		}
	}
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "Server is overloaded", body)
	for _, p := range []*process{g, e, e5} {
		_, err := command(t, p.dialWS(t, "carol"), 1, "ping")
		var ce websocket.CloseError
		require.ErrorAs(t, err, &ce, "every portal sees the same balance")
	}

	client := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer client.Close()
	ctx := context.Background()
	keys, err := client.Keys(ctx, "*").Result()
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	for _, k := range keys {
		ttl, err := client.PTTL(ctx, k).Result()
		require.NoError(t, err)
		assert.Positive(t, ttl, "key %q expires", k)
		assert.LessOrEqual(t, ttl, 129*time.Second, "key %q", k)
	}
}

// TestWindowLoadHeader checks that the window limits' load warning reaches
// the caller: Ratescope-Warning: load once more than 0.8 of a limit is used.
func TestWindowLoadHeader(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		t.Run(fw, func(t *testing.T) {
			t.Parallel()
			p := start(t, "-framework", fw, "-num-proxies", "0", "-rates", "api.anon=5/min,100/day")
			var got []string
			for range 6 {
				resp, _ := p.get(t, "/api/records", "")
				got = append(got, resp.Header.Get("Ratescope-Warning"))
			}
			assert.Equal(t, []string{"", "", "", "", "load", "load"}, got, "the 5th leaves nothing of 5; the 6th is refused, still warned")
		})
	}
}
