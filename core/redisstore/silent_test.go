package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// silencer is a loopback TCP proxy to a Redis server that can stop
// forwarding one of its connections, both ways, as a NAT that dropped the
// connection's state does: the client's writes succeed and nothing comes
// back, while its other connections answer.
type silencer struct {
	ln     net.Listener
	target string

	armed atomic.Bool // the next connection the client writes to goes silent

	mu    sync.Mutex
	conns []*silentConn
}

type silentConn struct {
	client, server net.Conn
	silent         atomic.Bool
}

func newSilencer(t *testing.T, target string) *silencer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &silencer{ln: ln, target: target}
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			_ = c.client.Close()
			_ = c.server.Close()
		}
	})
	go p.serve()
	return p
}

func (p *silencer) addr() string { return p.ln.Addr().String() }

func (p *silencer) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		c := &silentConn{client: client, server: server}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		go c.forward(server, client, &p.armed)
		go c.forward(client, server, nil)
	}
}

// forward copies src to dst until either closes, dropping what it reads
// once the connection is silent. It makes the connection silent when armed
// (not nil: the client's side) is set, before it forwards what it read.
func (c *silentConn) forward(dst, src net.Conn, armed *atomic.Bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && armed != nil && armed.CompareAndSwap(true, false) {
			c.silent.Store(true)
		}
		if n > 0 && !c.silent.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				_ = dst.Close()
			}
			return
		}
	}
}

// count returns how many connections the proxy accepted.
func (p *silencer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// silenceNext makes the next connection the client writes to silent,
// from that write on.
func (p *silencer) silenceNext() { p.armed.Store(true) }

// TestSilentConnection makes one of a pool's two connections silent while
// the node answers on the other, under four callers deciding in a loop:
// the batch sent on the silent connection fails its decisions within the
// bound of Timeout (100ms; a second is asserted), not when the socket
// gives up, and the node is not taken for stalled: no decision fails for
// waiting behind it, and counting goes on on the other connection.
func TestSilentConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy := newSilencer(t, server.Addr)
	client := redis.NewClient(&redis.Options{
		Addr:                  proxy.addr(),
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		PoolSize:              2,
	})
	t.Cleanup(func() { _ = client.Close() })
	const timeout = 100 * time.Millisecond
	s := newStore(t, redisstore.Config{Client: client, Timeout: timeout, BreakerFailures: 1000, CacheSize: -1})
	time.AfterFunc(300*time.Millisecond, proxy.silenceNext) // once both connections are in use

	var (
		mu       sync.Mutex
		slowest  time.Duration
		failures []error
		counted  atomic.Int64
	)
	stop := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				req := storecall.Request{Scope: "silent", Caller: core.UserCaller(fmt.Sprintf("w%d-%d", w, i)), Limits: []core.Rate{core.PerMinute(10)}, Cost: 1, Now: storetest.Start}
				start := time.Now()
				_, err := storecall.Take(ctx, s, req)
				took := time.Since(start)
				mu.Lock()
				slowest = max(slowest, took)
				if err != nil {
					failures = append(failures, err)
				} else {
					counted.Add(1)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("%d counted, %d failed, slowest %s, %d connections: %v", counted.Load(), len(failures), slowest, proxy.count(), failures)
	require.NotEmpty(t, failures, "a batch went out on the silent connection")
	for _, err := range failures {
		assert.NotContains(t, err.Error(), "stopped answering", "a healthy node is not taken for stalled")
	}
	assert.Less(t, slowest, time.Second, "the silent connection's batch gives up within the bound of Timeout")
	assert.Positive(t, counted.Load())
	assert.False(t, s.Stats().BreakerOpen)
}
