// Package guards holds what every framework adapter (ginlimit,
// echolimit, echo5limit) does in the same way: when a middleware
// is built, the Guard of its configuration, checked once, so that a bad
// scope, cost or store fails at startup with the same message on every
// framework; on each request, finding the caller, its plan and whether it
// is exempt ([Hooks]).
package guards

import (
	"errors"
	"fmt"

	"github.com/ratescope/ratescope/core"
)

// Window returns the Guard that decides a window middleware's requests
// ([core.Limiter.NewGuard]). Errors start with pkg, the adapter's package
// name.
func Window(pkg string, lim *core.Limiter, cfg core.GuardConfig) (*core.Guard, error) {
	if lim == nil {
		return nil, noLimiter(pkg)
	}
	g, err := lim.NewGuard(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pkg, err)
	}
	return g, nil
}

func noLimiter(pkg string) error {
	return errors.New(pkg + ": no Limiter: build one with core.New")
}
