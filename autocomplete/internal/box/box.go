// Package box holds what package autocomplete and its guards for Gin, Echo
// v4 and Echo v5 share: the name of a search box's scope, and the check
// that the limiter has it.
package box

import (
	"fmt"
	"slices"

	"github.com/ratescope/ratescope/core"
)

// Scope returns the scope of the search box called name: "autocomplete."
// and the name.
func Scope(name string) string {
	return "autocomplete." + name
}

// Check returns an error unless lim knows the scope of the search box
// called name, saying how to add it. The guards call it when they are
// built, so that a missing scope fails at startup.
func Check(lim *core.Limiter, name string) error {
	if lim == nil {
		return nil // the adapter reports a missing limiter
	}
	if slices.ContainsFunc(lim.Config().Scopes, func(s core.Scope) bool { return s.Name == Scope(name) }) {
		return nil
	}
	return fmt.Errorf("search box %q: the limiter has no scope %q: add autocomplete.Scopes() (or autocomplete.NewScope(%q)) to core.Config.Scopes", name, Scope(name), name)
}
