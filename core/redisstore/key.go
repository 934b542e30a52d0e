package redisstore

import (
	"encoding/hex"
	"strconv"
	"time"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/internal/storekey"
)

// appendKey appends the key of req's counts:
//
//	PREFIX SCOPE ":{" ID "}:" PERIODS
//
// where ID is "a" and the 32 hex digits of storekey.Addr16 for an anonymous
// caller, "n" for an anonymous caller whose address is unknown (whose
// Addr16 is that of 0.0.0.0), or "u" and the escaped storekey.User of the
// user id for a signed-in one (an id above 64 bytes is counted by its digest), and PERIODS
// lists the limits' periods in order ("60s,86400s"). SCOPE and ID are
// escaped so that neither holds a brace: the first "{" of the key is the one
// before ID, so the hash tag is exactly ID.
func appendKey(b []byte, prefix string, req *core.Request) []byte {
	b = append(b, prefix...)
	b = appendEscaped(b, req.Scope)
	b = append(b, ":{"...)
	if req.Caller.Kind() == core.User {
		b = append(b, 'u')
		b = appendEscaped(b, storekey.User(req.Caller.User()))
	} else if !storekey.Known(req.Caller) {
		b = append(b, 'n') // no address: apart from every "a" key
	} else {
		k := storekey.Addr16(req.Caller)
		b = append(b, 'a')
		b = hex.AppendEncode(b, k[:])
	}
	b = append(b, "}:"...)
	for i, r := range req.Limits {
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
	return b
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
