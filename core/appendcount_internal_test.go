package core

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestAppendCount checks that appendCount appends what strconv.AppendInt
// appends: at every power of ten and its neighbours, at the ends of
// int64, and for random values; into a buffer with room, as SetHeaders
// gives it, and into one with no room to spare.
func TestAppendCount(t *testing.T) {
	values := []int64{0, 1, 9, 99, math.MaxInt64, math.MinInt64, -1, -100}
	for p := int64(10); p > 0 && p <= math.MaxInt64/10; p *= 10 {
		values = append(values, p-1, p, p+1)
	}
	r := rand.New(rand.NewPCG(27, 27))
	for range 10_000 {
		values = append(values, r.Int64N(math.MaxInt64), r.Int64N(1_000_000))
	}
	const prefix = `"api.anon.min";r=`
	var roomy [rateLimitLen]byte
	for _, v := range values {
		want := string(strconv.AppendInt([]byte(prefix), v, 10))
		tight := []byte(prefix)[:len(prefix):len(prefix)]
		if got := string(appendCount(tight, v)); got != want {
			t.Fatalf("appendCount(%d), no room = %q, want %q", v, got, want)
		}
		if got := string(appendCount(append(roomy[:0], prefix...), v)); got != want {
			t.Fatalf("appendCount(%d), room = %q, want %q", v, got, want)
		}
	}
}
