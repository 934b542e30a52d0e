// Package redistest starts real redis-server processes on loopback ports for
// tests: a single server ([StartServer]) and a Redis Cluster of masters
// ([StartCluster]). Nothing is mocked.
//
// The binaries come from the Debian package redis-server (redis-server and
// redis-cli on PATH). When they are missing the functions return an error
// saying so: tests must fail, never skip, so that CI cannot pass without
// running them.
//
// Start servers once per test binary, from TestMain, and stop them when
// m.Run returns; tests then share them and keep apart by key (unique scopes),
// never by flushing. A test that stops or pauses a server (to see a store
// fail) starts one of its own with [ServerFor], which stops it at cleanup.
//
// Servers keep no data on disk (--save "" --appendonly no) and work in a
// temporary directory that Stop removes. On Linux a server is killed if the
// test process dies, so no server outlives a crashed test.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startTimeout bounds how long a server or cluster may take to get ready.
const startTimeout = 10 * time.Second

// Server is one redis-server process listening on 127.0.0.1. Its methods are
// safe for concurrent use.
type Server struct {
	// Addr is the server's address, "127.0.0.1:PORT". It stays the same
	// across [Server.Stop] and [Server.Restart].
	Addr string

	port    int
	cluster bool
	bin     string
	dir     string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// StartServer starts a redis-server on a free loopback port and waits until
// it answers PING. The error says what to install if redis-server is not on
// PATH. Stop the server with [Server.Stop].
func StartServer() (*Server, error) {
	return startServer(false)
}

// ServerFor is StartServer for one test: it fails tb (never skips) if the
// server cannot start and closes the server when tb's cleanup runs.
func ServerFor(tb testing.TB) *Server {
	tb.Helper()
	s, err := StartServer()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func startServer(cluster bool) (*Server, error) {
	bin, err := lookPath("redis-server")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	// A free port can be taken between the probe and the server's bind:
	// try a few.
	var errs []error
	for range 5 {
		port, err := freePort(cluster)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), port: port, cluster: cluster, bin: bin, dir: dir}
		if err := s.Restart(); err != nil {
			errs = append(errs, err)
			continue
		}
		return s, nil
	}
	_ = os.RemoveAll(dir)
	return nil, fmt.Errorf("redistest: cannot start redis-server: %w", errors.Join(errs...))
}

// lookPath finds a Redis binary or explains how to get it.
func lookPath(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("redistest: %s not found on PATH: the Redis tests need a real server; install it (Debian: apt-get install redis-server): %w", name, err)
	}
	return p, nil
}

// freePort returns a loopback port that is free now; for a cluster node, the
// port 10000 above it (the cluster bus) must be free too.
func freePort(cluster bool) (int, error) {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("redistest: find a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if !cluster {
			_ = l.Close()
			return port, nil
		}
		if port+10000 > 65535 {
			_ = l.Close()
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		_ = l.Close()
		if err != nil {
			continue
		}
		_ = bus.Close()
		return port, nil
	}
	return 0, errors.New("redistest: no free port pair for a cluster node")
}

// Restart starts the server again after [Server.Stop], on the same address,
// and waits until it answers PING. Its data is gone: a restarted server
// starts empty. Restarting a running server is an error.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("redistest: server %s is running", s.Addr)
	}
	args := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--logfile", "redis.log",
		"--daemonize", "no",
		"--protected-mode", "no",
		// DEBUG SLEEP makes a slow server for failure tests.
		"--enable-debug-command", "local",
	}
	if s.cluster {
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000",
			// A master that fails leaves its slots unserved; the
			// others keep serving theirs, as a deployment that
			// wants one failed master to stop only its own keys
			// must be configured.
			"--cluster-require-full-coverage", "no",
		)
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.cmd, s.done = cmd, done
	if err := s.waitReady(done); err != nil {
		s.stopLocked()
		return err
	}
	return nil
}

// waitReady polls PING until the server answers, it exits, or startTimeout.
func (s *Server) waitReady(exited <-chan struct{}) error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("redistest: redis-server on %s exited at start: %s", s.Addr, s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: redis-server on %s not ready after %s: %w; log: %s", s.Addr, startTimeout, err, s.logTail())
		}
		time.Sleep(10 * time.Millisecond) // polling a starting process, not a window
	}
}

// logTail returns the end of the server's log, for error messages.
func (s *Server) logTail() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	if err != nil {
		return "(no log)"
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// Stop stops the server and waits for it to exit; [Server.Restart] starts it
// again. Stopping a stopped server does nothing.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
	return nil
}

func (s *Server) stopLocked() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a paused server cannot exit
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd, s.done = nil, nil
}

// Pause freezes the server (SIGSTOP): connections stay open but nothing is
// answered, as with a server that hangs. [Server.Resume] undoes it.
func (s *Server) Pause() error {
	return s.signal(syscall.SIGSTOP)
}

// Resume lets a paused server run again (SIGCONT).
func (s *Server) Resume() error {
	return s.signal(syscall.SIGCONT)
}

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return fmt.Errorf("redistest: server %s is stopped", s.Addr)
	}
	return s.cmd.Process.Signal(sig)
}

// Close stops the server for good and removes its directory.
func (s *Server) Close() error {
	err := s.Stop()
	return errors.Join(err, os.RemoveAll(s.dir))
}

// Cluster is a Redis Cluster of master nodes on loopback, without replicas.
type Cluster struct {
	// Addrs are the nodes' addresses; any of them serves as a seed for
	// redis.ClusterOptions.Addrs.
	Addrs []string

	nodes []*Server
}

// StartCluster starts n (at least 3) cluster-enabled servers, joins them
// with redis-cli --cluster create, and waits until every node reports
// cluster_state:ok. Stop it with [Cluster.Close].
func StartCluster(n int) (*Cluster, error) {
	if n < 3 {
		return nil, fmt.Errorf("redistest: a cluster needs at least 3 masters, not %d", n)
	}
	cli, err := lookPath("redis-cli")
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	for range n {
		s, err := startServer(true)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		c.nodes = append(c.nodes, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("redistest: redis-cli --cluster create: %w: %s", err, out)
	}
	if err := c.waitOK(); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// waitOK polls CLUSTER INFO on every node until all say cluster_state:ok.
func (c *Cluster) waitOK() error {
	deadline := time.Now().Add(startTimeout)
	for _, addr := range c.Addrs {
		cl := redis.NewClient(&redis.Options{Addr: addr})
		for {
			info, err := cl.ClusterInfo(context.Background()).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				_ = cl.Close()
				return fmt.Errorf("redistest: cluster node %s not ok after %s: %v %s", addr, startTimeout, err, info)
			}
			time.Sleep(20 * time.Millisecond) // polling cluster formation, not a window
		}
		_ = cl.Close()
	}
	return nil
}

// Nodes returns the cluster's servers, one per master, in the order of
// Addrs, so that a test can stop or pause one of them.
func (c *Cluster) Nodes() []*Server {
	return c.nodes
}

// ClusterFor is StartCluster for one test: it fails tb (never skips) if the
// cluster cannot start and closes it when tb's cleanup runs.
func ClusterFor(tb testing.TB, n int) *Cluster {
	tb.Helper()
	c, err := StartCluster(n)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Close stops every node and removes their directories.
func (c *Cluster) Close() error {
	var errs []error
	for _, s := range c.nodes {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
