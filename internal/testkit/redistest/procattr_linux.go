package redistest

import (
	"os/exec"
	"syscall"
)

// setDeathSignal has the kernel kill the server if the test process dies.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
