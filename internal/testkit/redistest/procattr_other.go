//go:build !linux

package redistest

import "os/exec"

// setDeathSignal does nothing outside Linux: Stop and Close are the only
// clean-up.
func setDeathSignal(*exec.Cmd) {}
