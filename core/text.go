package core

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// This file gives the settings of a [Config] one text form each, through
// encoding.TextMarshaler and encoding.TextUnmarshaler: flag.TextVar reads
// them from flags, and encoding/json and YAML decoders from strings, with
// errors that name the key and the bad part.

// MarshalText returns r as [Rate.String] writes it ("60/min").
func (r Rate) MarshalText() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return []byte(r.String()), nil
}

// UnmarshalText sets r to the rate text writes as N/PERIOD: a positive
// integer N, a slash, and a period made of an optional positive integer
// multiplier and a unit, short, long or plural, in lower case: s, sec,
// secs, second, seconds; m, min, mins, minute, minutes; h, hr, hrs, hour,
// hours; d, day, days. Spaces around the parts are ignored. Examples:
// "60/min", "1000/day", "100/15m", "5/10s", "3/minutes", "100/days". The
// error quotes text and says what is accepted.
func (r *Rate) UnmarshalText(text []byte) error {
	v, err := parseRate(string(text))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// A RateTable is the text form of [Config.Rates]: space-separated parts
// SCOPE.KIND=RATE[,RATE...], such as
//
//	api.anon=60/min,1000/day autocomplete.project.user=10/min,1000/day
//
// A part SCOPE.user@PLAN=RATE[,RATE...] gives signed-in callers on a plan
// their rates ([Scope.Plans]), over the periods of SCOPE.user:
//
//	api.user=600/min,20000/day api.user@gold=6000/min,200000/day
//
// Read it from a flag (flag.TextVar), an environment variable, YAML or JSON
// (a string in that form) with [RateTable.UnmarshalText]. Each part is
// checked for the form and its rates; [New] checks that the scope is
// known.
type RateTable map[string]string

// parseRateTable reads s, space-separated SCOPE.KIND=RATE[,RATE...] and
// SCOPE.user@PLAN=RATE[,RATE...] parts, into a RateTable. Every bad part
// is reported, joined, each error quoting the part and saying what is wrong
// with it.
func parseRateTable(s string) (RateTable, error) {
	t := RateTable{}
	return t, t.add(s)
}

// add adds the parts of s to t.
func (t RateTable) add(s string) error {
	var errs []error
	for _, part := range strings.Fields(s) {
		key, val, ok := strings.Cut(part, "=")
		if !ok {
			val = ""
		}
		errs = append(errs, t.set(part, key, val))
	}
	return errors.Join(errs...)
}

// set checks key and val, written part in the text, and adds them to t.
func (t RateTable) set(part, key, val string) error {
	if strings.Contains(key, planSep) {
		if _, _, err := checkPlanKey(key); err != nil {
			return fmt.Errorf("%q: %w", part, err)
		}
	} else if _, _, known := splitRateKey(key); !known {
		return fmt.Errorf("%q: key %q is not SCOPE.anon or SCOPE.user (nor SCOPE.user@PLAN); want SCOPE.KIND=RATE[,RATE...], e.g. api.anon=60/min,1000/day", part, key)
	}
	if val == "" {
		return fmt.Errorf("%q: no rate; want SCOPE.KIND=RATE[,RATE...], e.g. api.anon=60/min,1000/day", part)
	}
	if _, dup := t[key]; dup {
		return fmt.Errorf("%q: %s given twice", part, key)
	}
	if _, err := parseRates(val); err != nil {
		return fmt.Errorf("%q: %w", part, err)
	}
	t[key] = val
	return nil
}

// String returns the table in the form [RateTable.UnmarshalText] reads,
// sorted by key.
func (t RateTable) String() string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k + "=" + t[k])
	}
	return b.String()
}

// MarshalText returns [RateTable.String].
func (t RateTable) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText replaces the table with the parts of text. Every bad part
// is reported, joined, each error quoting the part and saying what is
// wrong with it; the table is then left as it was.
func (t *RateTable) UnmarshalText(text []byte) error {
	v, err := parseRateTable(string(text))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// ParseNetworks reads comma-separated networks or addresses. An
// IPv4-mapped network is read as the IPv4 network it maps
// (::ffff:10.0.0.0/104 is 10.0.0.0/8), since every address is looked up
// as IPv4; one of fewer than 96 bits maps no IPv4 network and is an error.
// The error names each bad part.
func ParseNetworks(s string) (Networks, error) {
	var out Networks
	var errs []error
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if p, err := netip.ParsePrefix(part); err == nil {
			u, ok := unmapPrefix(p)
			if !ok {
				errs = append(errs, fmt.Errorf("network %q: an IPv4-mapped network is written with 96 bits or more (::ffff:0:0/96 is 0.0.0.0/0); write it as IPv4, such as 10.0.0.0/8", part))
				continue
			}
			out = append(out, u.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil {
			errs = append(errs, fmt.Errorf("network %q: want an address or a network such as 10.0.0.0/8 or 2001:db8::/32", part))
			continue
		}
		a = a.WithZone("").Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, errors.Join(errs...)
}

// String returns the networks comma-separated, in the form ParseNetworks
// reads.
func (n Networks) String() string {
	parts := make([]string, len(n))
	for i, p := range n {
		parts[i] = p.String()
	}
	return strings.Join(parts, ",")
}

// MarshalText returns [Networks.String].
func (n Networks) MarshalText() ([]byte, error) { return []byte(n.String()), nil }

// UnmarshalText replaces the list with the one [ParseNetworks] reads.
func (n *Networks) UnmarshalText(text []byte) error {
	v, err := ParseNetworks(string(text))
	if err != nil {
		return err
	}
	*n = v
	return nil
}
