//go:build soak

package redisstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The long runs behind make soak (build tag soak): the figures of
// docs/reliability.md.

// TestSoakSteadyLoad runs 50 clients for a minute against a server and
// against the cluster: no decision fails open.
func TestSoakSteadyLoad(t *testing.T) {
	for _, tc := range loadClients {
		t.Run(tc.name, func(t *testing.T) {
			o := steadyLoad(t, tc.client(t), time.Minute, 0)
			assert.Zero(t, o.failed.Load(), "none fails open")
		})
	}
}

// TestSoakClusterMasterDown keeps one master of three down for 30 seconds,
// past the cluster's node timeout (5s), when the other masters mark it
// failed.
func TestSoakClusterMasterDown(t *testing.T) {
	o := clusterMasterDown(t, 30*time.Second)
	assert.GreaterOrEqual(t, o.healthyCounted(), 0.999, "callers on healthy masters are counted")
}
