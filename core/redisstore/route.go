package redisstore

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// nodes finds the node of a key. With a *redis.ClusterClient, each master
// is a node of its own, found with ClusterClient.MasterForKey (the slot of
// the key's hash tag in the client's map of the cluster), and its batches go
// straight to that master's client, so that nothing the ClusterClient does
// for another master (retries, redirections) can hold them up. A command
// that meets a redirection (MOVED or ASK: the map is out of date) is sent
// again through the ClusterClient, which follows it and reads the map anew.
// With any other client, the store has one node.
//
// Until the cluster's map has been read once, every key goes to the node
// named after the whole cluster (cluster), so that a first decision never
// waits for the client to read the map outside the store's timeout.
type nodes struct {
	cluster *redis.ClusterClient // nil for other clients
	all     *node                // the only node, or the whole cluster before its map is known
	newNode func(addr string, client redis.UniversalClient) *node
	mapped  atomic.Bool // the cluster's map has been read

	mu     sync.Mutex
	byAddr sync.Map // master address -> *node
}

// forKey returns the node of key.
func (ns *nodes) forKey(ctx context.Context, key string) *node {
	if ns.cluster == nil || !ns.mapped.Load() {
		return ns.all
	}
	master, err := ns.cluster.MasterForKey(ctx, key)
	if err != nil {
		return ns.all
	}
	addr := master.Options().Addr
	if n, ok := ns.byAddr.Load(addr); ok {
		return n.(*node)
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if n, ok := ns.byAddr.Load(addr); ok {
		return n.(*node)
	}
	n := ns.newNode(addr, master)
	ns.byAddr.Store(addr, n)
	return n
}

// answered notes that a node answered: from then on the cluster's map is
// known, and keys go to the nodes of their masters.
func (ns *nodes) answered() {
	if ns.cluster != nil && !ns.mapped.Load() {
		ns.mapped.Store(true)
	}
}

// each calls f for every node.
func (ns *nodes) each(f func(*node)) {
	f(ns.all)
	ns.byAddr.Range(func(_, n any) bool {
		f(n.(*node))
		return true
	})
}
