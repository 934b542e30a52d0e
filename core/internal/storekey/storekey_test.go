package storekey_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/internal/storekey"
)

func TestUser(t *testing.T) {
	t.Parallel()
	short := strings.Repeat("a", storekey.MaxUser)
	assert.Equal(t, short, storekey.User(short), "an id of MaxUser bytes is kept")
	assert.Equal(t, "alice", storekey.User("alice"))
	assert.Equal(t, "", storekey.User(""))

	long := short + "b"
	k := storekey.User(long)
	assert.Len(t, k, 71)
	assert.True(t, strings.HasPrefix(k, "sha256:"), k)
	assert.Greater(t, len(k), storekey.MaxUser, "no short id can be a digest form")
	assert.Equal(t, k, storekey.User(long), "stable")
	assert.NotEqual(t, k, storekey.User(short+"c"), "two long ids stay apart")

	huge := strings.Repeat("x", 1<<20)
	assert.Len(t, storekey.User(huge), 71, "a 1 MiB id costs what a short one does")
	assert.NotEqual(t, storekey.User(huge), storekey.User(huge[:len(huge)-1]+"y"))
	assert.NotEqual(t, k, storekey.User(k), "a long id written as a digest form is itself digested")
}

// FuzzUser checks that distinct ids keep distinct forms, no longer than
// 71 bytes, and that short ids are kept as they are.
func FuzzUser(f *testing.F) {
	f.Add("alice", "bob")
	f.Add(strings.Repeat("a", 65), strings.Repeat("a", 64))
	f.Add(storekey.User(strings.Repeat("z", 100)), strings.Repeat("z", 100))
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, kb := storekey.User(a), storekey.User(b)
		if a != b && ka == kb {
			t.Fatalf("%q and %q share the form %q", a, b, ka)
		}
		if len(ka) > 71 {
			t.Fatalf("form of %d bytes", len(ka))
		}
		if len(a) <= storekey.MaxUser && ka != a {
			t.Fatalf("short id %q changed to %q", a, ka)
		}
	})
}

// The unknown caller's key is IPv4-mapped, which no IPv6 network's key
// is, whatever its length: it is apart from every network in a table that
// keeps IPv4 callers elsewhere, and Known tells it from 0.0.0.0 in one
// that does not.
func TestAddr16Unknown(t *testing.T) {
	t.Parallel()
	unknown := storekey.Addr16(core.Caller{})
	assert.False(t, storekey.Known(core.Caller{}))
	assert.Equal(t, [16]byte{10: 0xff, 11: 0xff}, unknown, "::ffff:0.0.0.0")
	for _, addr := range []string{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::", "::ffff:0:0:0", "::fffe:0:0", "2001:db8::1"} {
		for _, bits := range []int{128, 96, 64, 1} {
			p, err := netip.MustParseAddr(addr).Prefix(bits)
			require.NoError(t, err)
			c := core.NetworkCaller(p)
			assert.True(t, storekey.Known(c))
			assert.NotEqual(t, unknown, storekey.Addr16(c), "%s", p)
		}
	}
	zero := core.NetworkCaller(netip.MustParsePrefix("0.0.0.0/32"))
	assert.Equal(t, unknown, storekey.Addr16(zero), "shared with 0.0.0.0, which Known tells apart")
	assert.True(t, storekey.Known(zero))
}

// FuzzAddr16 checks that no IPv6 network, of any length, has the unknown
// caller's key.
func FuzzAddr16(f *testing.F) {
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 128)
	f.Add([]byte{10: 0xff, 11: 0xff}, 128)
	unknown := storekey.Addr16(core.Caller{})
	f.Fuzz(func(t *testing.T, b []byte, bits int) {
		if len(b) != 16 || bits < 1 || bits > 128 {
			return
		}
		a := netip.AddrFrom16([16]byte(b))
		c := core.Caller{}
		if a.Is4In6() {
			c = core.NetworkCaller(netip.PrefixFrom(a.Unmap(), 32))
		} else {
			p, _ := a.Prefix(bits)
			c = core.NetworkCaller(p)
		}
		if storekey.Addr16(c) == unknown && storekey.Known(c) && !a.Is4In6() {
			t.Fatalf("%s has the unknown caller's key", c.Network())
		}
	})
}

func ExampleUser() {
	fmt.Println(storekey.User("alice"))
	fmt.Println(len(storekey.User(strings.Repeat("x", 1<<20))))
	// Output:
	// alice
	// 71
}
