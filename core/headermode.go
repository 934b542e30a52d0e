package core

import (
	"fmt"
	"strings"
)

// A HeaderMode says which responses carry the rate-limit fields that
// [Decision.SetHeaders] (and a balance decision's) write: every
// response ([HeadersAll], the zero value and the default), refusals only
// ([HeadersRefused]) or none ([HeadersNone]). A refusal of a window limit
// (429) carries Retry-After whatever the policy. Set it as
// Config.Headers; its text form is "all", "refused" or "none", read from
// a flag (flag.Value), an environment variable, YAML or JSON
// (encoding.TextUnmarshaler).
//
// The fields are RateLimit-Policy and RateLimit, Ratescope-Warning (the
// load warning) and, with Config.LegacyHeaders, the X-RateLimit-* fields.
// The IETF draft lets a server send them with every response or only with
// some; writing none on served requests saves the work of formatting them.
// Use [HeadersRefused] or [HeadersNone] when clients do not read the fields
// or a gateway strips them anyway. The decision itself
// (Decision.Limits, Decision.Load, the observation hook) is the same
// under every policy.
type HeaderMode uint8

const (
	// HeadersAll writes the fields on every checked response, served or
	// refused: the default.
	HeadersAll HeaderMode = iota
	// HeadersRefused writes the fields on refusals only, with
	// Retry-After; a served response carries none of them, not even the
	// load warning.
	HeadersRefused
	// HeadersNone writes no field but Retry-After, on refusals.
	HeadersNone
)

// headerModeNames are the text forms of the policies, by value.
var headerModeNames = [...]string{HeadersAll: "all", HeadersRefused: "refused", HeadersNone: "none"}

// String returns the text form of p ("all", "refused" or "none"), or
// "HeaderMode(N)" for a value that is no policy.
func (p HeaderMode) String() string {
	if int(p) < len(headerModeNames) {
		return headerModeNames[p]
	}
	return fmt.Sprintf("HeaderMode(%d)", uint8(p))
}

// MarshalText returns [HeaderMode.String], or an error for a value
// that is no policy.
func (p HeaderMode) MarshalText() ([]byte, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	return []byte(p.String()), nil
}

// UnmarshalText reads "all", "refused" or "none" (case and surrounding
// spaces ignored; "" is "all", the default). The error quotes the text and
// names the forms it accepts.
func (p *HeaderMode) UnmarshalText(text []byte) error {
	t := strings.ToLower(strings.TrimSpace(string(text)))
	if t == "" {
		*p = HeadersAll
		return nil
	}
	for v, name := range headerModeNames {
		if t == name {
			*p = HeaderMode(v)
			return nil
		}
	}
	return fmt.Errorf("header policy %q: want all, refused or none", text)
}

// validate reports a value that is no policy, for [Config.Validate].
func (p HeaderMode) validate() error {
	if int(p) >= len(headerModeNames) {
		return fmt.Errorf("Headers %s: want core.HeadersAll, core.HeadersRefused or core.HeadersNone (all, refused or none)", p)
	}
	return nil
}

// onServed reports whether a served response carries the fields.
func (p HeaderMode) onServed() bool { return p == HeadersAll }
