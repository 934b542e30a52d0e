package benchmarks

import (
	"net/netip"
	"strconv"
)

// Limit is both the per-minute and the per-day limit of the HTTP and Redis
// benchmarks: high enough that no request is denied, below ratescope's
// largest limit (2^31-1).
const Limit = 1_000_000_000

// Callers is the number of distinct callers of the many-callers cases, who
// send in turn.
const Callers = 10_000

// MemoryCallers is the number of distinct callers of BenchmarkMemory.
const MemoryCallers = 1_000_000

// CallerAddr returns the address of caller i, as an IPv4 address in
// 10.0.0.0/8: distinct for every i below 2^24.
func CallerAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
}

// RemoteAddr returns the RemoteAddr of a request from caller i, with a port.
func RemoteAddr(i int) string {
	return CallerAddr(i).String() + ":" + strconv.Itoa(40000+i%20000)
}

// HeaderWriters are the peers that write rate-limit headers of their own
// on every response they serve (X-RateLimit-* or X-Rate-Limit-*), which
// benchtable compares with ratescope writing its fields on every response
// (core.HeadersAll, the row "ratescope"); TestHeaderWriters checks it.
var HeaderWriters = []string{"ulule", "throttled", "sethvargo", "httprate", "tollbooth"}

// Headerless are the peers that write no rate-limit header on a served
// response (the x/time/rate map, Echo's RateLimiter), which benchtable
// compares with ratescope writing its fields on refusals only
// (core.HeadersRefused, the row "ratescope-refused"); TestHeaderWriters
// checks it.
var Headerless = []string{"xrate", "echo"}
