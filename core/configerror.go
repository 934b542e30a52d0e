package core

import "errors"

// The ids of the problems [New] rejects, the E ids of package checks.
const (
	// idInvalidRate: a rate, or a rate key of Config.Rates that names no
	// known scope and kind; or a plan ([Scope.Plans]) with an invalid
	// name, for anonymous callers, or whose periods are not those of the
	// scope's user rates.
	idInvalidRate = "ratescope.E001"
	// idNoStore: Config.Store is nil.
	idNoStore = "ratescope.E002"
	// idOutOfRange: a setting outside its range (NumProxies, IPv6Bits, LoadRatio,
	// ErrorLogInterval, Headers), or an empty id in ExemptUsers.
	idOutOfRange = "ratescope.E003"
	// idInvalidScope: a scope name that is invalid or given twice.
	idInvalidScope = "ratescope.E004"
	// idInvalidProxies: an invalid network in TrustedProxies or
	// ExemptNetworks.
	idInvalidProxies = "ratescope.E005"
)

// A ConfigError is one problem of a [Config], with the id that package
// checks reports it under and that its error text starts with:
//
//	ratescope.E001: rate key "api.anno" names no known scope and kind: ...
type ConfigError struct {
	// ID is one of ratescope.E001 (an invalid rate or rate key), E002 (no
	// store), E003 (a setting out of its range), E004 (an invalid scope)
	// and E005 (an invalid network); each keeps its meaning between
	// releases.
	ID string
	// Err says what is wrong.
	Err error
}

// Error returns the id, a colon and the problem.
func (e *ConfigError) Error() string { return e.ID + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *ConfigError) Unwrap() error { return e.Err }

// withID wraps each error joined in err as a ConfigError of the given id.
func withID(id string, err error) []error {
	if err == nil {
		return nil
	}
	var out []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, withID(id, e)...)
		}
		return out
	}
	var ce *ConfigError
	if errors.As(err, &ce) {
		return []error{err}
	}
	return []error{&ConfigError{ID: id, Err: err}}
}
