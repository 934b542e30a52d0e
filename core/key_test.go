package core_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ratescope/ratescope/core"
)

// userKey is the form under which stores count the user id id.
func userKey(id string) string {
	form, ok := core.UserCaller(id).Key().User()
	if !ok {
		return ""
	}
	return form
}

func TestKeyUser(t *testing.T) {
	t.Parallel()
	short := strings.Repeat("a", 64)
	assert.Equal(t, short, userKey(short), "an id of MaxKeyUser bytes is kept")
	assert.Equal(t, "alice", userKey("alice"))
	assert.Equal(t, "", userKey(""), "no id: an anonymous caller")

	long := short + "b"
	k := userKey(long)
	assert.Len(t, k, 71)
	assert.True(t, strings.HasPrefix(k, "sha256:"), k)
	assert.Equal(t, k, userKey(long), "stable")
	assert.NotEqual(t, k, userKey(short+"c"), "two long ids stay apart")

	huge := strings.Repeat("x", 1<<20)
	assert.Len(t, userKey(huge), 71, "a 1 MiB id costs what a short one does")
	assert.NotEqual(t, userKey(huge), userKey(huge[:len(huge)-1]+"y"))
	assert.NotEqual(t, k, userKey(k), "a long id written as a digest form is itself digested")
}

// FuzzKeyUser checks that distinct ids keep distinct forms, no longer than
// 71 bytes, and that short ids are kept as they are.
func FuzzKeyUser(f *testing.F) {
	f.Add("alice", "bob")
	f.Add(strings.Repeat("a", 65), strings.Repeat("a", 64))
	f.Add(userKey(strings.Repeat("z", 100)), strings.Repeat("z", 100))
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, kb := userKey(a), userKey(b)
		if a != b && ka == kb && a != "" && b != "" && a[0] != 0 && b[0] != 0 {
			t.Fatalf("%q and %q share the form %q", a, b, ka)
		}
		if len(ka) > 71+1 {
			t.Fatalf("form of %d bytes", len(ka))
		}
	})
}

// The caller whose address is unknown has a key of its own: no network of
// any length, of either family, has it.
func TestKeyUnknown(t *testing.T) {
	t.Parallel()
	_, known := core.Caller{}.Key().Addr()
	assert.False(t, known)
	_, signedIn := core.Caller{}.Key().User()
	assert.False(t, signedIn)
	for _, addr := range []string{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::", "::ffff:0:0:0", "::fffe:0:0", "2001:db8::1", "0.0.0.0", "255.255.255.255"} {
		for _, bits := range []int{128, 96, 64, 32, 1} {
			p, err := netip.MustParseAddr(addr).Prefix(bits)
			if err != nil {
				continue
			}
			k := core.NetworkCaller(p).Key()
			_, known := k.Addr()
			assert.True(t, known, "%s", p)
			assert.NotEqual(t, core.Caller{}.Key(), k, "%s", p)
		}
	}
}

// FuzzKeyAddr checks that every network has a known address in its key,
// the IPv4 ones in their mapped form.
func FuzzKeyAddr(f *testing.F) {
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 128)
	f.Add([]byte{10: 0xff, 11: 0xff}, 128)
	f.Fuzz(func(t *testing.T, b []byte, bits int) {
		if len(b) != 16 || bits < 0 || bits > 128 {
			return
		}
		p, err := netip.AddrFrom16([16]byte(b)).Prefix(bits)
		if err != nil {
			return
		}
		c := core.NetworkCaller(p)
		a, known := c.Key().Addr()
		if !known {
			t.Fatalf("%s: no address in its key", p)
		}
		if want := c.Network().Addr().As16(); a != want {
			t.Fatalf("%s: key %x, want %x", p, a, want)
		}
	})
}

func ExampleCaller_Key() {
	id, _ := core.UserCaller("alice").Key().User()
	fmt.Println(id)
	long, _ := core.UserCaller(strings.Repeat("x", 1<<20)).Key().User()
	fmt.Println(len(long))
	// Output:
	// alice
	// 71
}
