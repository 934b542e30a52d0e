package replay_test

import (
	"bytes"
	"testing"

	"github.com/ratescope/ratescope/cmd/ratescope/internal/replay"
)

// FuzzParseLine feeds any bytes to the parser of every format: it must
// never panic, and a line it reads has a time, an address that is a part
// of the line, and a path that starts as the line's does.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		`203.0.113.7 - alice [01/Mar/2024:12:00:00 +0000] "GET /api/records?q=1 HTTP/1.1" 200 12 "-" "curl/8"`,
		`203.0.113.7 - - [01/Mar/2024:12:00:00 -0700] "GET /api/x HTTP/1.1" 200 12 "-" "curl/8" "10.0.0.1, 192.0.2.3"`,
		`2024-03-01T12:00:00+02:00 203.0.113.7 "-" - GET /autocomplete/project?q=a 200`,
		`{"ts":1709294400.5,"client":"203.0.113.7","fwd":"a, b","who":"bob","verb":"GET","uri":"/api/x","n":{"a":[1,"}"]}}`,
		`{"time":"2024-03-01T12:00:00Z","remote_addr":"2001:db8::1","request_uri":"http://h/api/\u0041"}`,
		`203.0.113.7 - - [01/Mar/2024:12:00:00 +0000] "\x16\x03" 400 0 "-" "-"`,
	} {
		f.Add([]byte(s))
	}
	fields, err := replay.ParseJSONFields("time=ts,addr=client,xff=fwd,user=who,method=verb,path=uri")
	if err != nil {
		f.Fatal(err)
	}
	var parsers []replay.Parser
	for _, format := range []string{"combined", "main", "json", `$time_iso8601 $remote_addr "$http_x_forwarded_for" $remote_user $request_method $request_uri $status`} {
		p, err := replay.NewParser(format, fields)
		if err != nil {
			f.Fatal(err)
		}
		parsers = append(parsers, p)
	}
	jsonDefault, err := replay.NewParser("json", replay.JSONFields{})
	if err != nil {
		f.Fatal(err)
	}
	parsers = append(parsers, jsonDefault)
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, p := range parsers {
			var l replay.Line
			if p.Parse(line, &l) != nil {
				continue
			}
			if l.Time.IsZero() {
				t.Fatalf("%q: no time", line)
			}
			if len(l.Path) == 0 {
				t.Fatalf("%q: no path", line)
			}
			// JSON strings with escapes are decoded into a buffer of
			// their own; the other formats point into the line.
			if !bytes.Contains(line, l.Addr) && !bytes.Contains(line, []byte{'\\'}) {
				t.Fatalf("%q: address %q is not a part of the line", line, l.Addr)
			}
		}
	})
}
