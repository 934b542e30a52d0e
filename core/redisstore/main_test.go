package redisstore_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/ratescope/ratescope/internal/testkit/redistest"
)

// server and cluster are shared by every test of the package: tests keep
// apart by scope, never by flushing. A test that stops a server starts its
// own.
var (
	server  *redistest.Server
	cluster *redistest.Cluster
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	server, err = redistest.StartServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: the Redis store is tested against a real Redis:", err)
		return 1
	}
	defer server.Close()
	cluster, err = redistest.StartCluster(3)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: the Redis store is tested against a real Redis Cluster:", err)
		return 1
	}
	defer cluster.Close()
	return m.Run()
}
