package proxyflag_test

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/internal/proxyflag"
)

func TestValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want *int
		err  string
	}{
		{name: "default kept", args: nil, want: new(1)},
		{name: "zero", args: []string{"-n", "0"}, want: new(0)},
		{name: "two", args: []string{"-n", " 2 "}, want: new(2)},
		{name: "unset", args: []string{"-n", "unset"}, want: nil},
		{name: "negative", args: []string{"-n", "-1"}, err: `number of proxies "-1": want a whole number, 0 or more, or "unset"`},
		{name: "not a number", args: []string{"-n", "two"}, err: `number of proxies "two"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := new(1)
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			fs.Var(proxyflag.Value{N: &n}, "n", "proxies")
			err := fs.Parse(tc.args)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, n)
		})
	}
	var unset *int
	assert.Equal(t, "unset", proxyflag.Value{N: &unset}.String())
	two := new(2)
	assert.Equal(t, "2", proxyflag.Value{N: &two}.String())
}
