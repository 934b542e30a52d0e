package storekey_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

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

func ExampleUser() {
	fmt.Println(storekey.User("alice"))
	fmt.Println(len(storekey.User(strings.Repeat("x", 1<<20))))
	// Output:
	// alice
	// 71
}
