//go:build soak

package memstore_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSoakFlood sends 2,000,000 and then 10,000,000 new callers within a
// minute through a store at the default bound (1,048,576 entries), with
// 1,000 callers over their limit: none is served before its Retry-After,
// and the heap stays within what the bound allows (about 120 bytes an
// entry, plus the maps' slack: 256 bytes an entry at most).
func TestSoakFlood(t *testing.T) {
	const bound = 1 << 20
	for _, callers := range []int{2_000_000, 10_000_000} {
		t.Run(fmt.Sprint(callers), func(t *testing.T) {
			r := flood(t, bound, 1000, callers, 2)
			t.Logf("%d new callers in a minute, bound %d: %d of %d blocked callers served early, %d evictions, %d entries, heap +%d MiB (%d B an entry)",
				callers, bound, r.servedEarly, r.blocked, r.evictions, r.entries, r.heapGrowth>>20, r.heapGrowth/uint64(r.entries))
			assert.Zero(t, r.servedEarly)
			assert.LessOrEqual(t, r.entries, bound)
			assert.Less(t, r.heapGrowth, uint64(256*bound))
		})
	}
}
