// Package storekey gives the forms under which every store keeps a caller:
// a signed-in caller's id, bounded in length ([User]), and an anonymous
// caller's network as 16 bytes ([Addr16]). The stores share them, so that
// a caller is kept apart from every other in every store alike; they are
// no API of the stores' users.
package storekey

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/ratescope/ratescope/core"
)

// MaxUser is the length, in bytes, of the longest user id that stores
// keep as it is. A longer id is kept as its digest (see [User]), so that a
// caller cannot make its entry in a store (or its key in Redis) as large
// as it likes.
const MaxUser = 64

// userDigestPrefix starts the stored form of a long user id.
const userDigestPrefix = "sha256:"

// User returns the form of a signed-in caller's id under which every
// store counts it: the id itself when it is at most [MaxUser] bytes long,
// and otherwise "sha256:" and the 64 hex digits of the id's SHA-256 digest,
// 71 bytes whatever the id's length.
//
// No two ids share a form: a short id is at most 64 bytes, every digest form
// is 71, so a short id never meets a long one, and two long ids meet only if
// SHA-256 collides. A 1 MiB id thus costs a store what a 64-byte one does
// (the digest is computed once per decision).
func User(id string) string {
	if len(id) <= MaxUser {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	b := make([]byte, 0, len(userDigestPrefix)+hex.EncodedLen(len(sum)))
	b = append(b, userDigestPrefix...)
	b = hex.AppendEncode(b, sum[:])
	return string(b)
}

// Addr16 returns an anonymous caller's network as 16 bytes, an IPv4
// address in its IPv4-mapped IPv6 form: stores use it as a compact map
// key. Distinct networks give distinct keys (a caller's network is masked
// to its prefix length, which is the same for every anonymous caller of
// one Limiter).
//
// A caller whose address is unknown gives the IPv4-mapped form of
// 0.0.0.0, ::ffff:0.0.0.0. Every 16-byte value is some network's key (every IPv6
// address is one with Config.IPv6Bits 128), but no IPv6 network has an
// IPv4-mapped key, since an address is unmapped before it is masked: in a
// table that keeps IPv4 callers elsewhere (the memory store's window
// tables keep them under 4 bytes), the unknown caller shares no count. A
// store that keeps IPv4 callers under Addr16 too must keep the unknown
// caller apart itself, as [Known] tells; the conformance suite
// (core/storetest) counts 0.0.0.0, the unknown caller and the last IPv6
// address apart in every store.
func Addr16(c core.Caller) [16]byte {
	if !Known(c) {
		return unknown16
	}
	return c.Network().Addr().As16()
}

// unknown16 is the key Addr16 gives a caller whose address is unknown:
// ::ffff:0.0.0.0.
var unknown16 = [16]byte{10: 0xff, 11: 0xff}

// Known reports whether the address of an anonymous caller is known: false
// for the caller whose key [Addr16] shares with 0.0.0.0.
func Known(c core.Caller) bool { return c.Network().IsValid() }
