package liveview

// The tests of package liveview_test read the view's figures as the page
// and the JSON answer take them, with their Go types and times.
type (
	Snapshot = snapshot
	Series   = series
	Refused  = refused
)

// Seconds is the span of the per-second series, in seconds.
const Seconds = seconds

// Snapshot returns what the view shows now.
func (v *View) Snapshot() Snapshot { return v.snapshot() }
