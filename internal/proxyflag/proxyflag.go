// Package proxyflag reads core.Config.NumProxies from a command-line flag,
// for the ratescope command and the example portal: a whole number of
// proxies, 0 or more, or "unset".
package proxyflag

import (
	"fmt"
	"strconv"
	"strings"
)

// Value is a flag.Value that sets *N: to a number of proxies, or to nil
// for "unset" (or nothing).
type Value struct{ N **int }

// String returns the number, or "unset".
func (v Value) String() string {
	if v.N == nil || *v.N == nil {
		return "unset"
	}
	return strconv.Itoa(**v.N)
}

// Set reads a whole number, 0 or more, or "unset". The error quotes s.
func (v Value) Set(s string) error {
	s = strings.TrimSpace(s)
	if s == "" || s == "unset" {
		*v.N = nil
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("number of proxies %q: want a whole number, 0 or more, or \"unset\"", s)
	}
	*v.N = &n
	return nil
}
