package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// This file gives the settings of a [Config] a text form, so that they load
// from flags (flag.Value), environment variables and YAML
// (encoding.TextUnmarshaler) and JSON, with errors that name the key and the
// bad part.

// MarshalText returns r as [Rate.String] writes it ("60/min").
func (r Rate) MarshalText() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return []byte(r.String()), nil
}

// UnmarshalText sets r to the rate [ParseRate] reads from text.
func (r *Rate) UnmarshalText(text []byte) error {
	v, err := ParseRate(string(text))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Set is [Rate.UnmarshalText] for the flag package.
func (r *Rate) Set(s string) error { return r.UnmarshalText([]byte(s)) }

// MarshalText returns the number of proxies, or "unset".
func (p ProxyCount) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads a whole number of proxies, 0 or more, or "unset" (or
// nothing) for unset.
func (p *ProxyCount) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	if s == "" || s == "unset" {
		*p = ProxyCount{}
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("number of proxies %q: want a whole number, 0 or more, or \"unset\"", s)
	}
	*p = Proxies(n)
	return nil
}

// Set is [ProxyCount.UnmarshalText] for the flag package.
func (p *ProxyCount) Set(s string) error { return p.UnmarshalText([]byte(s)) }

// MarshalJSON returns the number of proxies, or null when unset.
func (p ProxyCount) MarshalJSON() ([]byte, error) {
	if !p.set {
		return []byte("null"), nil
	}
	return strconv.AppendInt(nil, int64(p.n), 10), nil
}

// UnmarshalJSON reads a number (1), a string ("1", "unset") or null.
func (p *ProxyCount) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*p = ProxyCount{}
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		b = []byte(s)
	}
	return p.UnmarshalText(b)
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
// Use it as a flag (flag.Var), or decode it from an environment variable,
// YAML or JSON (a string in that form, or an object of keys and rates),
// then convert it: Config{Rates: table}. Each part is checked for the form
// and its rates; [New] checks that the scope is known.
type RateTable map[string]string

// ParseRateTable reads s, space-separated SCOPE.KIND=RATE[,RATE...] and
// SCOPE.user@PLAN=RATE[,RATE...] parts, into a RateTable. Every bad part is reported, joined, each error quoting
// the part and saying what is wrong with it.
func ParseRateTable(s string) (RateTable, error) {
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
	if _, err := ParseRates(val); err != nil {
		return fmt.Errorf("%q: %w", part, err)
	}
	t[key] = val
	return nil
}

// String returns the table in the form [ParseRateTable] reads, sorted by
// key.
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

// Set adds the parts of s to the table, for the flag package, each
// replacing the table's entry of its key: a flag replaces the rates that
// the variable held as its default, and a later flag those of an earlier
// one, key by key; a flag given twice adds both. A key given twice in s is
// an error, as in [ParseRateTable]; on any error the table is left as it
// was.
func (t *RateTable) Set(s string) error {
	v, err := ParseRateTable(s)
	if err != nil {
		return err
	}
	if *t == nil {
		*t = RateTable{}
	}
	maps.Copy(*t, v)
	return nil
}

// UnmarshalText replaces the table with the one [ParseRateTable] reads.
func (t *RateTable) UnmarshalText(text []byte) error {
	v, err := ParseRateTable(string(text))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// UnmarshalJSON reads a string in the form of [ParseRateTable], or an
// object {"api.anon": "60/min,1000/day", ...}; either way every part is
// checked as ParseRateTable checks it, and the table is replaced.
func (t *RateTable) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return t.UnmarshalText([]byte(s))
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("rates: want a string or an object of strings: %w", err)
	}
	return t.fromMap(m)
}

// UnmarshalYAML is UnmarshalJSON for YAML (go.yaml.in/yaml/v3 and
// gopkg.in/yaml.v2 call it): a string or a mapping of keys to rates.
func (t *RateTable) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err == nil {
		return t.UnmarshalText([]byte(s))
	}
	var m map[string]string
	if err := unmarshal(&m); err != nil {
		return fmt.Errorf("rates: want a string or a mapping of strings: %w", err)
	}
	return t.fromMap(m)
}

// fromMap replaces t with m, each entry checked as a part of
// ParseRateTable.
func (t *RateTable) fromMap(m map[string]string) error {
	v := RateTable{}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		errs = append(errs, v.set(k+"="+m[k], k, m[k]))
	}
	if err := errors.Join(errs...); err != nil {
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

// Set replaces the list with the one [ParseNetworks] reads, for the flag
// package.
func (n *Networks) Set(s string) error {
	v, err := ParseNetworks(s)
	if err != nil {
		return err
	}
	*n = v
	return nil
}

// MarshalText returns [Networks.String].
func (n Networks) MarshalText() ([]byte, error) { return []byte(n.String()), nil }

// UnmarshalText is [Networks.Set].
func (n *Networks) UnmarshalText(text []byte) error { return n.Set(string(text)) }

// UnmarshalJSON reads a string in the form of ParseNetworks, or an array of
// such strings.
func (n *Networks) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return n.Set(s)
	}
	var parts []string
	if err := json.Unmarshal(b, &parts); err != nil {
		return fmt.Errorf("networks: want a string or an array of strings: %w", err)
	}
	return n.Set(strings.Join(parts, ","))
}
