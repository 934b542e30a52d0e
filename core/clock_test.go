package core

import (
	"testing"
	"time"
)

// The default clock gives the times time.Now gives, monotonic readings
// included, and takes its anchor again once it is old.
func TestSystemClock(t *testing.T) {
	c := newSystemClock(time.Millisecond)
	first := c.anchor.Load()
	for range 1000 {
		before := time.Now()
		got := c.now()
		after := time.Now()
		if got.Sub(before) < 0 || after.Sub(got) < 0 {
			t.Fatalf("monotonic reading %v not between %v and %v", got, before, after)
		}
		if w := got.UnixNano(); w < before.UnixNano()-int64(time.Millisecond) || w > after.UnixNano()+int64(time.Millisecond) {
			t.Fatalf("wall time %v not within a millisecond of %v..%v", got, before, after)
		}
		if got.Round(0) == got {
			t.Fatal("no monotonic reading")
		}
	}
	time.Sleep(2 * time.Millisecond)
	c.now()
	if c.anchor.Load() == first {
		t.Error("anchor older than every is kept")
	}
	kept := newSystemClock(time.Hour)
	a := kept.anchor.Load()
	kept.now()
	if kept.anchor.Load() != a {
		t.Error("a fresh anchor is taken again")
	}
}
