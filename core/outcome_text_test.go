package core_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
)

// An Outcome is written in JSON and YAML by its name, as every other enum
// of the package is.
func TestOutcomeText(t *testing.T) {
	t.Parallel()
	for _, o := range append(core.Outcomes(), core.OutcomeNone) {
		t.Run(o.String(), func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(o)
			require.NoError(t, err)
			assert.Equal(t, `"`+o.String()+`"`, string(b))
			var back core.Outcome
			require.NoError(t, json.Unmarshal(b, &back))
			assert.Equal(t, o, back)
		})
	}
	var o core.Outcome
	assert.EqualError(t, o.UnmarshalText([]byte("alowed")), `outcome "alowed": want none, allowed, denied, failed_open, exempt, shadow, failed_closed, reset or local`)
	_, err := core.Outcome(200).MarshalText()
	assert.EqualError(t, err, "outcome 200: not an Outcome")
}
