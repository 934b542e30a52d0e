package wslimit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
	"github.com/ratescope/ratescope/wslimit"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// echoServer serves WebSocket connections that answer each message, whose
// text is its cost, with {"cost":N} and the warning when warned; the
// message "push" makes the server push a message of cost 3000 first. The
// caller is the user of the X-User header; user "root" is exempt.
func echoServer(t *testing.T, logs *syncBuffer) string {
	t.Helper()
	return echoServerWith(t, logs, nil, nil)
}

// echoServerWith is echoServer on a limiter, a balance scope and a server
// whose configs tweak and wsTweak change, if not nil.
func echoServerWith(t *testing.T, logs *syncBuffer, tweak func(*core.Config, *balance.Config), wsTweak func(*wslimit.Config)) string {
	t.Helper()
	store := memstore.New(memstore.Config{SweepInterval: -1})
	cfg := core.Config{
		Store:  store,
		Now:    storetest.NewClock(storetest.Start).Now,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	}
	bcfg := balance.Config{Store: store, Scope: "ws"}
	if tweak != nil {
		tweak(&cfg, &bcfg)
	}
	lim, err := core.New(cfg)
	require.NoError(t, err)
	bcfg.Limiter = lim
	guard, err := balance.New(bcfg)
	require.NoError(t, err)
	wcfg := wslimit.Config{Guard: guard}
	if wsTweak != nil {
		wsTweak(&wcfg)
	}
	ws, err := wslimit.New(wcfg)
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := r.Header.Get("X-User")
		caller := lim.Caller(r, core.UserCaller(user))
		conn, err := ws.Accept(w, r, caller, user == "root")
		if err != nil {
			return
		}
		ctx := r.Context()
		for {
			msg, err := conn.Read(ctx)
			if err != nil {
				return
			}
			if string(msg) == "push" {
				if err := conn.Push(ctx, 3000, map[string]string{"type": "pushed"}); err != nil {
					return
				}
				msg = []byte("0")
			}
			var cost int64
			_ = json.Unmarshal(msg, &cost)
			d, err := conn.Charge(ctx, cost)
			if err != nil {
				return // ErrDropped or ErrFailedClosed: closed
			}
			if err := conn.WriteJSON(ctx, balance.WarnJSON(d.Load, map[string]int64{"cost": cost, "balance": d.Balance})); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func dial(t *testing.T, url, user string) *websocket.Conn {
	t.Helper()
	h := http.Header{}
	if user != "" {
		h.Set("X-User", user)
	}
	c, _, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{HTTPHeader: h})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

type reply struct {
	Warning string `json:"warning"`
	Type    string `json:"type"`
	Balance int64  `json:"balance"`
}

func send(t *testing.T, c *websocket.Conn, msg string) (reply, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.Write(ctx, websocket.MessageText, []byte(msg)))
	_, b, err := c.Read(ctx)
	if err != nil {
		return reply{}, err
	}
	var r reply
	require.NoError(t, json.Unmarshal(b, &r))
	return r, nil
}

func TestWarnThenDrop(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	url := echoServer(t, &logs)
	c := dial(t, url, "alice")
	var warned, above int
	var err error
	for i := 0; i < 1000; i++ {
		var r reply
		r, err = send(t, c, "3000")
		if err != nil {
			break
		}
		if r.Balance >= 5000 {
			above++
		}
		if r.Warning == "load" {
			warned++
			assert.GreaterOrEqual(t, r.Balance, int64(5000))
		}
	}
	require.Error(t, err)
	// The messages come within a second (the clock stands still): the
	// first reply at or above the threshold is warned, not the others.
	assert.Equal(t, 1, warned, "warned once a second, not on every reply")
	assert.Greater(t, above, 1)
	var ce websocket.CloseError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, websocket.StatusPolicyViolation, ce.Code)
	assert.Equal(t, "threshold exceeded", ce.Reason)
	assert.Equal(t, 1, strings.Count(logs.String(), "Consumer entry alice dropped with balance"), logs.String())

	// Back on a new connection, still dropped: closed at the first message.
	c = dial(t, url, "alice")
	_, err = send(t, c, "20")
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, websocket.StatusPolicyViolation, ce.Code)
	assert.Equal(t, 1, strings.Count(logs.String(), "Consumer entry alice dropped"), "logged when alice became dropped, not on every refusal")

	// Others are not affected.
	r, err := send(t, dial(t, url, "bob"), "20")
	require.NoError(t, err)
	assert.Empty(t, r.Warning)
}

func TestPushIsCharged(t *testing.T) {
	t.Parallel()
	url := echoServer(t, &syncBuffer{})
	c := dial(t, url, "carol")
	ctx := context.Background()
	require.NoError(t, c.Write(ctx, websocket.MessageText, []byte("push")))
	_, b, err := c.Read(ctx)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"pushed"}`, string(b))
	// Then the reply to "push", a message of cost 0.
	_, b, err = c.Read(ctx)
	require.NoError(t, err)
	var r reply
	require.NoError(t, json.Unmarshal(b, &r))
	assert.Equal(t, int64(3000/32), r.Balance, "the pushed message cost 3000")
}

func TestExemptNeverDropped(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	url := echoServer(t, &logs)
	c := dial(t, url, "root")
	for range 300 {
		r, err := send(t, c, "3000")
		require.NoError(t, err)
		assert.Empty(t, r.Warning)
		assert.Zero(t, r.Balance)
	}
	assert.Empty(t, logs.String())
}

func TestConfig(t *testing.T) {
	t.Parallel()
	_, err := wslimit.New(wslimit.Config{})
	assert.ErrorContains(t, err, "wslimit: no Guard: build one with balance.New")
}

// downStore keeps no balance: every call fails.
type downStore struct{}

func (downStore) Bind(string, core.Kind, []core.Rate) (core.Counter, error) {
	return storecall.Down(errors.New("store down")).Bind("", 0, nil)
}

func (downStore) Charge(context.Context, balance.Request) (balance.Result, error) {
	return balance.Result{}, errors.New("store down")
}

func (downStore) ResetBalance(context.Context, balance.Request) error {
	return errors.New("store down")
}

func TestFailClosedClosesWithTryAgainLater(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	url := echoServerWith(t, &logs, func(c *core.Config, b *balance.Config) {
		c.Store, b.Store = downStore{}, downStore{}
		b.FailMode = core.FailClosed
	}, nil)
	c := dial(t, url, "alice")
	_, err := send(t, c, "20")
	assert.Equal(t, websocket.StatusTryAgainLater, websocket.CloseStatus(err), "closed: %v", err)
	assert.Contains(t, logs.String(), "fails closed")

	open := echoServerWith(t, &logs, func(c *core.Config, b *balance.Config) { c.Store, b.Store = downStore{}, downStore{} }, nil)
	r, err := send(t, dial(t, open, "alice"), "20")
	require.NoError(t, err, "a scope that fails open serves the message")
	assert.Zero(t, r.Balance)
}

// TestMessageTooBig: a message above the read limit (32 KiB) is charged
// as one of the largest cost before the connection is closed with 1009;
// one at the limit is read.
func TestMessageTooBig(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	url := echoServer(t, &logs)
	for _, tc := range []struct {
		name   string
		user   string
		charge int64 // the balance after the message too big
	}{
		{name: "charged", user: "alice", charge: 3000 / 32},
		{name: "exempt", user: "root", charge: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := dial(t, url, tc.user)
			r, err := send(t, c, "0"+strings.Repeat(" ", 32768-1))
			require.NoError(t, err, "a message of exactly the default limit, 32 KiB, is read")
			assert.Zero(t, r.Balance)
			_, err = send(t, c, strings.Repeat(" ", 40_000))
			var ce websocket.CloseError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, websocket.StatusMessageTooBig, ce.Code)
			assert.Equal(t, "message larger than 32768 bytes", ce.Reason)

			c = dial(t, url, tc.user)
			r, err = send(t, c, "0")
			require.NoError(t, err)
			assert.Equal(t, tc.charge, r.Balance, "the message too big was charged as a heavy one")
		})
	}
}

func TestReadLimitHuge(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	url := echoServerWith(t, &logs, nil, func(c *wslimit.Config) { c.ReadLimit = math.MaxInt64 })
	c := dial(t, url, "alice")
	r, err := send(t, c, "3000")
	require.NoError(t, err)
	assert.Equal(t, int64(3000/32), r.Balance, "the largest limit reads the message whole")
}

func TestReadLimitConfig(t *testing.T) {
	t.Parallel()
	err := wslimit.Config{ReadLimit: -1}.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no Guard")
	assert.Contains(t, err.Error(), "ReadLimit -1: want 0 (32768) or more")
}
