package core

import (
	"net/netip"
	"testing"
)

var ipv4PortCases = []struct {
	in   string
	want string // "" when the fast path must leave it to the general parser
}{
	{"10.0.0.1", "10.0.0.1"},
	{"10.0.0.1:40001", "10.0.0.1"},
	{"255.255.255.255:65535", "255.255.255.255"},
	{"0.0.0.0:1", "0.0.0.0"},
	{"192.0.2.1:99999", "192.0.2.1"}, // 1 to 5 digits, as isPort reads a port
	{"256.0.0.1", ""},
	{"01.0.0.1", ""},
	{"1.2.3", ""},
	{"1.2.3.4.5", ""},
	{"1.2.3.4:", ""},
	{"1.2.3.4:123456", ""},
	{"1.2.3.4:1a", ""},
	{" 1.2.3.4", ""},
	{"1.2.3.4 ", ""},
	{"1.2.3.1000", ""},
	{"1.2.3.04", ""},
	{"1..2.3", ""},
	{"1.2.3.", ""},
	{"1.2.3.256:80", ""},
	{"1.2.3.4.:80", ""},
	{"1.2.3.4::80", ""},
	{"[::1]:80", ""},
	{"::ffff:1.2.3.4", ""},
	{"", ""},
}

func TestParseIPv4Port(t *testing.T) {
	for _, tc := range ipv4PortCases {
		got, ok := parseIPv4Port(tc.in)
		if tc.want == "" {
			if ok {
				t.Errorf("parseIPv4Port(%q) = %v, want it left to the general parser", tc.in, got)
			}
			continue
		}
		if !ok || got != netip.MustParseAddr(tc.want) {
			t.Errorf("parseIPv4Port(%q) = %v, %v; want %s", tc.in, got, ok, tc.want)
		}
	}
}

// FuzzParseIPv4Port checks that the fast path reads every input it accepts
// as the general parser does.
func FuzzParseIPv4Port(f *testing.F) {
	for _, tc := range ipv4PortCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fast, ok := parseIPv4Port(s)
		if !ok {
			return
		}
		general, gok := parseAnyHostAddr(s)
		if !gok || fast != general {
			t.Fatalf("%q: fast path %v, general parser %v, %v", s, fast, general, gok)
		}
	})
}
