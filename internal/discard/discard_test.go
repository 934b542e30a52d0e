package discard_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/internal/discard"
)

func TestResponseWriter(t *testing.T) {
	t.Parallel()
	var w discard.ResponseWriter
	var _ http.ResponseWriter = &w
	w.Header().Set("X-A", "1")
	assert.Equal(t, "1", w.Header().Get("X-A"), "the header map is kept between calls")
	w.WriteHeader(http.StatusTeapot)
	n, err := fmt.Fprint(&w, "hello")
	require.NoError(t, err)
	assert.Equal(t, 5, n)
}
