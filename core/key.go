package core

import (
	"crypto/sha256"
	"encoding/hex"
)

// A Key names one caller's count within a [Counter]. The [Limiter] builds
// it once per request, from the [Caller]: a signed-in caller by its id, an
// anonymous caller by its network, and an anonymous caller whose address is
// unknown by a key of its own that no network shares.
//
// An id longer than 64 bytes (maxKeyUser) is kept as "sha256:" and the 64 hex
// digits of its SHA-256 digest, so that no caller can make its count as
// large as it likes; no short id is ever a digest form, and two long ids
// share a key only if SHA-256 collides.
type Key struct {
	user  string   // signed in: the id as counted
	addr  [16]byte // anonymous: the network's first address, 16-byte form
	known bool     // anonymous: the address is known
}

// maxKeyUser is the length, in bytes, of the longest user id a [Key] keeps
// as it is.
const maxKeyUser = 64

const keyDigestPrefix = "sha256:"

// Key returns the key of c's count.
func (c Caller) Key() Key {
	if c.user != "" {
		return Key{user: keyUser(c.user)}
	}
	if !c.network.IsValid() {
		return Key{}
	}
	return Key{addr: c.network.Addr().As16(), known: true}
}

// keyUser returns the form under which a user id is counted.
func keyUser(id string) string {
	if len(id) <= maxKeyUser {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	b := make([]byte, 0, len(keyDigestPrefix)+hex.EncodedLen(len(sum)))
	b = append(b, keyDigestPrefix...)
	b = hex.AppendEncode(b, sum[:])
	return string(b)
}

// User returns the id of a signed-in caller's key, as counted, and true; or
// "" and false for an anonymous caller.
func (k Key) User() (string, bool) { return k.user, k.user != "" }

// Addr returns the first address of an anonymous caller's network, in its
// 16-byte form (an IPv4 address as ::ffff:a.b.c.d), and true; or false for a
// signed-in caller or one whose address is unknown, whose key a store must
// keep apart from every network's.
func (k Key) Addr() ([16]byte, bool) { return k.addr, k.known }
