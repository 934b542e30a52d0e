package memstore_test

import (
	"testing"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) core.Store {
		s := memstore.New(memstore.Config{})
		t.Cleanup(func() { s.Close() })
		return s
	})
}
