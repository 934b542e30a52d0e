package balance_test

import (
	"encoding/json"
	"testing"

	"github.com/ratescope/ratescope/balance"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWarnJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		load bool
		v    any
		want string
	}{
		{name: "no load", load: false, v: map[string]int{"id": 1}, want: `{"id":1}`},
		{name: "load", load: true, v: map[string]int{"id": 1}, want: `{"warning":"load","id":1}`},
		{name: "empty object", load: true, v: struct{}{}, want: `{"warning":"load"}`},
		{name: "json-rpc result", load: false, v: map[string]any{"result": balance.WarnJSON(true, map[string]string{"status": "success"})}, want: `{"result":{"warning":"load","status":"success"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(balance.WarnJSON(tc.load, tc.v))
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(b))
		})
	}
	_, err := json.Marshal(balance.WarnJSON(true, []int{1}))
	assert.ErrorContains(t, err, "JSON object")
}
