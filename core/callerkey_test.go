package core_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ratescope/ratescope/core"
)

func TestUserKey(t *testing.T) {
	t.Parallel()
	short := strings.Repeat("a", core.MaxUserKey)
	assert.Equal(t, short, core.UserKey(short), "an id of MaxUserKey bytes is kept")
	assert.Equal(t, "alice", core.UserKey("alice"))
	assert.Equal(t, "", core.UserKey(""))

	long := short + "b"
	k := core.UserKey(long)
	assert.Len(t, k, 71)
	assert.True(t, strings.HasPrefix(k, "sha256:"), k)
	assert.Greater(t, len(k), core.MaxUserKey, "no short id can be a digest form")
	assert.Equal(t, k, core.UserKey(long), "stable")
	assert.NotEqual(t, k, core.UserKey(short+"c"), "two long ids stay apart")

	huge := strings.Repeat("x", 1<<20)
	assert.Len(t, core.UserKey(huge), 71, "a 1 MiB id costs what a short one does")
	assert.NotEqual(t, core.UserKey(huge), core.UserKey(huge[:len(huge)-1]+"y"))
	assert.NotEqual(t, k, core.UserKey(k), "a long id written as a digest form is itself digested")
}

// FuzzUserKey checks that distinct ids keep distinct forms, no longer than
// 71 bytes, and that short ids are kept as they are.
func FuzzUserKey(f *testing.F) {
	f.Add("alice", "bob")
	f.Add(strings.Repeat("a", 65), strings.Repeat("a", 64))
	f.Add(core.UserKey(strings.Repeat("z", 100)), strings.Repeat("z", 100))
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, kb := core.UserKey(a), core.UserKey(b)
		if a != b && ka == kb {
			t.Fatalf("%q and %q share the form %q", a, b, ka)
		}
		if len(ka) > 71 {
			t.Fatalf("form of %d bytes", len(ka))
		}
		if len(a) <= core.MaxUserKey && ka != a {
			t.Fatalf("short id %q changed to %q", a, ka)
		}
	})
}

func ExampleUserKey() {
	fmt.Println(core.UserKey("alice"))
	fmt.Println(len(core.UserKey(strings.Repeat("x", 1<<20))))
	// Output:
	// alice
	// 71
}
