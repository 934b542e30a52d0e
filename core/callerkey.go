package core

import (
	"crypto/sha256"
	"encoding/hex"
)

// MaxUserKey is the length, in bytes, of the longest user id that stores
// keep as it is. A longer id is kept as its digest (see [UserKey]), so that
// a caller cannot make its entry in a store (or its key in Redis) as large
// as it likes.
const MaxUserKey = 64

// userDigestPrefix starts the stored form of a long user id.
const userDigestPrefix = "sha256:"

// UserKey returns the form of a signed-in caller's id under which every
// store counts it: the id itself when it is at most [MaxUserKey] bytes long,
// and otherwise "sha256:" and the 64 hex digits of the id's SHA-256 digest,
// 71 bytes whatever the id's length.
//
// No two ids share a form: a short id is at most 64 bytes, every digest form
// is 71, so a short id never meets a long one, and two long ids meet only if
// SHA-256 collides. A 1 MiB id thus costs a store what a 64-byte one does
// (the digest is computed once per decision).
func UserKey(id string) string {
	if len(id) <= MaxUserKey {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	b := make([]byte, 0, len(userDigestPrefix)+hex.EncodedLen(len(sum)))
	b = append(b, userDigestPrefix...)
	b = hex.AppendEncode(b, sum[:])
	return string(b)
}
