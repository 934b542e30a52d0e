package core

import (
	"math/bits"
	"net/http"
	"strconv"
	"time"
)

// newKindLimits resolves the rates of one kind of caller in scope, and
// builds once the header strings that every decision on them writes (the
// RateLimit-Policy value, each limit's name), so that SetHeaders only
// appends the numbers.
func newKindLimits(scope string, kind Kind, rates []Rate, ratio float64, legacy bool) kindLimits {
	kl := kindLimits{rates: rates, minimum: MaxLimit, legacy: legacy}
	for i, r := range rates {
		kl.minimum = min(kl.minimum, r.Limit)
		kl.warnAt[i] = r.Limit - int64(ratio*float64(r.Limit))
		kl.names[i] = policyName(scope, kind, r)
		kl.parts[i] = kl.names[i] + ";r="
		if i > 0 {
			kl.policy += ", "
			kl.parts[i] = ", " + kl.parts[i]
		}
		kl.policy += kl.names[i] + ";q=" + strconv.FormatInt(r.Limit, 10) + ";w=" + strconv.FormatInt(int64(r.Period/time.Second), 10)
	}
	return kl
}

// rateLimitLen is room, on the stack, for the RateLimit value of two limits
// with long scope names; a longer value costs one more allocation.
const rateLimitLen = 128

// Header names set by [Decision.SetHeaders], in the canonical form that
// http.Header uses as map keys (names are case-insensitive on the wire).
const (
	headerPolicy     = "Ratelimit-Policy"
	headerRateLimit  = "Ratelimit"
	headerRetryAfter = "Retry-After"
)

// SetHeaders writes the decision to h, as the IETF draft
// draft-ietf-httpapi-ratelimit-headers describes (docs/headers.md names
// the revision and its sections):
//
//	RateLimit-Policy: "api.anon.min";q=60;w=60, "api.anon.day";q=1000;w=86400
//	RateLimit: "api.anon.min";r=0;t=7, "api.anon.day";r=940
//
// where q is the limit, w the period in seconds and r the units remaining.
// t, the seconds until a limit has quota again, is written for a limit
// that has no room for the request (it refused it, or would have in
// shadow mode): the seconds, rounded up, until it has room for it. A limit
// with room has no t: its store tells when its window will be empty, not
// when its next unit comes back, which in a sliding window is sooner.
// When the request is denied, it also sets Retry-After in whole seconds,
// rounded up: the t of the limit that refused, the largest when several
// did, so never earlier than any limit's t and never longer than the
// period of the limit that refused. With
// Config.LegacyHeaders it adds X-RateLimit-Limit, X-RateLimit-Remaining
// (of the tightest limit) and X-RateLimit-Reset (seconds). When the caller
// has used more than Config.LoadRatio of a limit ([Decision.Load]), it sets
// "Ratescope-Warning: load" ([headerWarning]). A decision that was not
// checked ([Decision.Checked]) writes nothing, but Retry-After when it
// failed closed ([OutcomeFailedClosed]).
//
// The limiter's Config.Headers ([HeaderMode]) says which decisions write
// the fields: with [HeadersRefused] a served request (shadow mode's too)
// writes nothing and a refused one writes them all; with [HeadersNone] a
// refused request writes Retry-After alone and a served one nothing.
func (d *Decision) SetHeaders(h http.Header) {
	if d.n == 0 || d.limits == nil {
		if d.Outcome == OutcomeFailedClosed {
			h[headerRetryAfter] = []string{strconv.FormatInt(d.retryAfterSeconds(), 10)}
		}
		return
	}
	k := d.limits
	if k.headers != HeadersAll {
		switch {
		case d.Allowed:
			return
		case k.headers == HeadersNone:
			h[headerRetryAfter] = []string{strconv.FormatInt(d.retryAfterSeconds(), 10)}
			return
		}
	}
	// The values of the fields share one allocation. Each field gets a
	// slice of it with no room to grow, so that adding a value to one
	// field copies it rather than writing over the next field's.
	n := 2
	if !d.Allowed {
		n++
	}
	if d.Load {
		n++
	}
	vals := make([]string, n)
	var buf [rateLimitLen]byte
	b := buf[:0]
	tight := 0
	for i := range d.n {
		st := &d.res.Limits[i]
		b = append(b, k.parts[i]...) // `, "scope.kind.period";r=`
		b = appendCount(b, st.Remaining)
		if st.RetryAfter > 0 {
			b = append(b, ";t="...)
			b = appendCount(b, ceilSeconds(st.RetryAfter))
		}
		if st.Remaining < d.res.Limits[tight].Remaining {
			tight = i
		}
	}
	vals[0], vals[1] = k.policy, string(b)
	h[headerPolicy] = vals[0:1:1]
	h[headerRateLimit] = vals[1:2:2]
	next := 2
	if !d.Allowed {
		vals[next] = strconv.FormatInt(d.retryAfterSeconds(), 10)
		h[headerRetryAfter] = vals[next : next+1 : next+1]
		next++
	}
	if d.Load {
		vals[next] = loadWarning
		h[headerWarning] = vals[next : next+1 : next+1]
	}
	if k.legacy {
		st := &d.res.Limits[tight]
		legacy := make([]string, 3)
		h["X-Ratelimit-Limit"] = append(legacy[0:0:1], strconv.FormatInt(st.Rate.Limit, 10))
		h["X-Ratelimit-Remaining"] = append(legacy[1:1:2], strconv.FormatInt(st.Remaining, 10))
		h["X-Ratelimit-Reset"] = append(legacy[2:2:3], strconv.FormatInt(ceilSeconds(st.Reset), 10))
	}
}

// decimalPairs holds "00" to "99", for appendCount.
const decimalPairs = "00010203040506070809" +
	"10111213141516171819" + "20212223242526272829" + "30313233343536373839" +
	"40414243444546474849" + "50515253545556575859" + "60616263646566676869" +
	"70717273747576777879" + "80818283848586878889" + "90919293949596979899"

// appendCount appends v in decimal, as strconv.AppendInt(b, v, 10) does
// (TestAppendCount checks it), for the counts of every RateLimit value: a
// count of 0 or more, two digits at a time, written in place with no call
// when b has room for them. A negative v, which no count is, and a count
// that b has no room for, go to strconv.
func appendCount(b []byte, v int64) []byte {
	if v < 0 {
		return strconv.AppendInt(b, v, 10)
	}
	u := uint64(v)
	// The number of digits, from the bit length (log10(2) is about
	// 1233/4096) and one comparison; then the digits go straight into
	// their place in b, the last two first.
	n := (bits.Len64(u) * 1233) >> 12
	if u >= pow10[n] {
		n++
	}
	n = max(n, 1)
	if cap(b)-len(b) < n {
		return strconv.AppendUint(b, u, 10)
	}
	b = b[:len(b)+n]
	d := b[len(b)-n:]
	for u >= 100 {
		q := u / 100
		j := (u - q*100) * 2
		n -= 2
		d[n], d[n+1] = decimalPairs[j], decimalPairs[j+1]
		u = q
	}
	if u >= 10 {
		d[0], d[1] = decimalPairs[u*2], decimalPairs[u*2+1]
	} else {
		d[0] = byte('0' + u)
	}
	return b
}

// pow10 holds 10^0 to 10^18, for appendCount: every power of ten that can
// begin a count of 1 to 19 digits.
var pow10 = [19]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

func policyName(scope string, kind Kind, r Rate) string {
	return `"` + scope + "." + kind.String() + "." + periodString(r.Period) + `"`
}
