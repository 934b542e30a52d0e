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
