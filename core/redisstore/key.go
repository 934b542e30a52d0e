package redisstore

import (
	"encoding/hex"
	"strconv"
	"time"

	"github.com/ratescope/ratescope/core"
)

// A request is one decision, give-back or reset asked of the store
// through a counter.
type request struct {
	head   string // the key up to its hash tag: PREFIX SCOPE ":{"
	tail   string // the key after its hash tag: "}:" PERIODS
	key    core.Key
	limits []core.Rate
	cost   int64
	now    time.Time
}

// appendKey appends the key of req's counts:
//
//	PREFIX SCOPE ":{" ID "}:" PERIODS
//
// where ID is "a" and the 32 hex digits of the network's address for an
// anonymous caller, "n" for one whose address is unknown (apart from every
// "a" key), or "u" and the escaped id of a signed-in one (as the Key
// counts it), and PERIODS lists the limits' periods in order
// ("60s,86400s"). SCOPE and ID are escaped so that neither holds a brace:
// the first "{" of the key is the one before ID, so the hash tag is
// exactly ID.
func appendKey(b []byte, req *request) []byte {
	b = append(b, req.head...)
	b = appendID(b, req.key)
	return append(b, req.tail...)
}

// appendID appends the hash tag of key.
func appendID(b []byte, key core.Key) []byte {
	if id, ok := key.User(); ok {
		b = append(b, 'u')
		return appendEscaped(b, id)
	}
	a, ok := key.Addr()
	if !ok {
		return append(b, 'n') // no address: apart from every "a" key
	}
	b = append(b, 'a')
	return hex.AppendEncode(b, a[:])
}

// keyParts returns the head and tail of the keys of scope's counts over
// the periods of limits (see appendKey).
func keyParts(prefix, scope string, limits []core.Rate) (head, tail string) {
	b := append([]byte(prefix), nil...)
	b = appendEscaped(b, scope)
	b = append(b, ":{"...)
	head = string(b)
	b = append(b[:0], "}:"...)
	for i, r := range limits {
		if i > 0 {
			b = append(b, ',')
		}
		if r.Period%time.Second == 0 {
			b = strconv.AppendInt(b, int64(r.Period/time.Second), 10)
			b = append(b, 's')
		} else {
			b = strconv.AppendInt(b, int64(r.Period/time.Microsecond), 10)
			b = append(b, "us"...)
		}
	}
	return head, string(b)
}

// appendEscaped appends s with '%', '{' and '}' written as %25, %7B and %7D.
// The escaping is one-to-one and its output holds no brace.
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%':
			b = append(b, "%25"...)
		case '{':
			b = append(b, "%7B"...)
		case '}':
			b = append(b, "%7D"...)
		default:
			b = append(b, c)
		}
	}
	return b
}
