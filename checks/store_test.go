package checks_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/checks"
	"github.com/ratescope/ratescope/core"
)

// checkingStore is a shared, reachable store that finds one problem with
// itself.
type checkingStore struct{ pingStore }

func (checkingStore) CheckStore(context.Context) []checks.Message {
	return []checks.Message{{ID: "ratescope.W604", Level: checks.Warning, Text: "the store evicts counts.", Hint: "Do not."}}
}

func TestStoreChecksItself(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{NumProxies: new(0), Store: checkingStore{}})
	msgs := checks.Run(context.Background(), lim.Config())
	require.Equal(t, []string{"ratescope.W604"}, ids(msgs))
	assert.Equal(t, checks.Warning, msgs[0].Level)
	assert.Equal(t, "ratescope.W604 WARNING: the store evicts counts. HINT: Do not.", msgs[0].String())
}
