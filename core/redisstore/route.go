package redisstore

import (
	"context"
	"strings"
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

// grouping says which take decisions of a batch may share a script call:
// the keys of one call must live on one node, and on a cluster in one
// hash slot (ADR 0006).
type grouping int

const (
	// oneCall: any keys (one server, or a Sentinel master): a batch's take
	// decisions make one call.
	oneCall grouping = iota
	// bySlot: a cluster: the keys of one hash slot.
	bySlot
	// byTag: a Ring, or a client the store does not know: the keys of one
	// hash tag, which any client that shards by hash tag puts on one node.
	byTag
)

// groupingOf returns the grouping for the store's client c.
func groupingOf(c redis.UniversalClient) grouping {
	switch c.(type) {
	case *redis.Client:
		return oneCall
	case *redis.ClusterClient:
		return bySlot
	}
	return byTag
}

// hashTag returns the part of key that a cluster hashes: between the first
// '{' and the next '}' if that is not empty, the whole key otherwise.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// slot returns key's Redis Cluster hash slot: the CRC-16 (XMODEM) of its
// hash tag, modulo 16,384. It runs for every decision on a cluster (see
// compose), so it reads the CRC of each byte from crcTable, a lookup a
// byte instead of eight shifts.
func slot(key string) int {
	tag := hashTag(key)
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^tag[i]]
	}
	return int(crc) % 16384
}

// crcTable is the CRC-16 (XMODEM, polynomial 0x1021) of each byte value,
// computed once; slot combines them.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()
