package replay

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Line is what a log line says about one request. Its byte slices point
// into the line read, and are valid until the next line is read.
type Line struct {
	// Time is the time of the request.
	Time time.Time
	// Addr is the peer address the writer of the log saw ($remote_addr).
	Addr []byte
	// Forwarded is the X-Forwarded-For header it received, or empty.
	Forwarded []byte
	// User is the signed-in user ($remote_user), or empty.
	User []byte
	// Method is the request's method, or empty when the log has none.
	Method []byte
	// Path is the request's path, without the query.
	Path []byte
}

// The formats of nginx that have names: combined (nginx's and Apache's),
// and nginx's stock main, which adds "$http_x_forwarded_for".
const (
	FormatCombined = `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"`
	FormatMain     = FormatCombined + ` "$http_x_forwarded_for"`
)

// A Parser reads log lines of one format.
type Parser interface {
	// Parse reads line into l. The error says why a line cannot be read.
	Parse(line []byte, l *Line) error
}

// NewParser returns the parser of a format: "combined", "main", "json", or
// an nginx log_format string ("$remote_addr - $remote_user ...").
func NewParser(format string, fields JSONFields) (Parser, error) {
	switch format {
	case "", "combined":
		return CompileFormat(FormatCombined)
	case "main":
		return CompileFormat(FormatMain)
	case "json":
		return newJSONParser(fields)
	}
	if !strings.Contains(format, "$") {
		return nil, fmt.Errorf("format %q: want combined, main, json or an nginx log_format string with $variables", format)
	}
	return CompileFormat(format)
}

// field is what a variable of a log format gives.
type field uint8

const (
	fSkip field = iota
	fAddr
	fUser
	fTimeLocal
	fTimeISO
	fMsec
	fRequest
	fMethod
	fURI
	fForwarded
)

var variables = map[string]field{
	"remote_addr":          fAddr,
	"remote_user":          fUser,
	"time_local":           fTimeLocal,
	"time_iso8601":         fTimeISO,
	"msec":                 fMsec,
	"request":              fRequest,
	"request_method":       fMethod,
	"request_uri":          fURI,
	"uri":                  fURI,
	"http_x_forwarded_for": fForwarded,
}

// token is a variable of a format and the literal text that follows it.
type token struct {
	field field
	name  string
	after []byte // the literal up to the next variable; empty at the end
}

// formatParser reads lines of an nginx log_format.
type formatParser struct {
	lead   []byte // the literal before the first variable
	tokens []token
	last   int // the index of the last token whose field is used

	// The last $time_local read, and its time.
	cached   bool
	timeText [26]byte
	time     time.Time
}

// CompileFormat returns the parser of an nginx log_format string. A
// variable it does not know is read and ignored. The format must name
// $remote_addr, a time ($time_local, $time_iso8601 or $msec) and the path
// ($request, $request_uri or $uri); two variables must be apart.
func CompileFormat(format string) (Parser, error) {
	p := &formatParser{last: -1}
	lit, rest := cutLiteral(format)
	p.lead = []byte(lit)
	have := map[field]bool{}
	for rest != "" {
		// rest starts with '$'.
		var name string
		if strings.HasPrefix(rest, "${") {
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return nil, fmt.Errorf("format %q: unclosed ${", format)
			}
			name, rest = rest[2:end], rest[end+1:]
		} else {
			i := 1
			for i < len(rest) && isVarChar(rest[i]) {
				i++
			}
			name, rest = rest[1:i], rest[i:]
		}
		if name == "" {
			return nil, fmt.Errorf("format %q: a $ with no variable name", format)
		}
		lit, rest = cutLiteral(rest)
		if lit == "" && rest != "" {
			return nil, fmt.Errorf("format %q: $%s is followed by another variable with nothing between: the line cannot be split", format, name)
		}
		f := variables[name]
		if f != fSkip {
			have[f] = true
			p.last = len(p.tokens)
		}
		p.tokens = append(p.tokens, token{field: f, name: name, after: []byte(lit)})
	}
	var missing []string
	if !have[fAddr] {
		missing = append(missing, "$remote_addr")
	}
	if !have[fTimeLocal] && !have[fTimeISO] && !have[fMsec] {
		missing = append(missing, "a time ($time_local, $time_iso8601 or $msec)")
	}
	if !have[fRequest] && !have[fURI] {
		missing = append(missing, "the path ($request, $request_uri or $uri)")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("format %q: no %s", format, strings.Join(missing, ", no "))
	}
	return p, nil
}

func isVarChar(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// cutLiteral returns the text of s up to its first '$', and the rest.
func cutLiteral(s string) (lit, rest string) {
	if i := strings.IndexByte(s, '$'); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

var (
	errLead    = errors.New("the line does not start as the format does")
	errRequest = errors.New("the request is not METHOD PATH PROTOCOL")
	errNoTime  = errors.New("no time")
)

// Parse implements [Parser].
func (p *formatParser) Parse(line []byte, l *Line) error {
	*l = Line{}
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	if !bytes.HasPrefix(line, p.lead) {
		return errLead
	}
	rest := line[len(p.lead):]
	for i := 0; i <= p.last; i++ {
		t := &p.tokens[i]
		var v []byte
		if len(t.after) == 0 {
			v, rest = rest, nil
		} else {
			j := bytes.Index(rest, t.after)
			if j < 0 {
				return fmt.Errorf("$%s: no %q after it", t.name, t.after)
			}
			v, rest = rest[:j], rest[j+len(t.after):]
		}
		if err := p.set(l, t.field, v); err != nil {
			return fmt.Errorf("$%s %q: %w", t.name, clip(v), err)
		}
	}
	if l.Time.IsZero() {
		return errNoTime
	}
	if len(l.Path) == 0 {
		return errRequest
	}
	return nil
}

// set stores v, the value of a variable, in l.
func (p *formatParser) set(l *Line, f field, v []byte) error {
	switch f {
	case fAddr:
		l.Addr = v
	case fUser:
		if !isDash(v) {
			l.User = v
		}
	case fForwarded:
		if !isDash(v) {
			l.Forwarded = v
		}
	case fTimeLocal:
		// Lines of one second share their time: read it once.
		if p.cached && bytes.Equal(v, p.timeText[:]) {
			l.Time = p.time
			return nil
		}
		t, err := parseTimeLocal(v)
		if err != nil {
			return err
		}
		l.Time, p.time, p.cached = t, t, true
		copy(p.timeText[:], v)
	case fTimeISO:
		t, err := time.Parse(time.RFC3339, string(v))
		if err != nil {
			return errors.New("not an ISO 8601 time")
		}
		l.Time = t.UTC()
	case fMsec:
		t, err := parseEpoch(v)
		if err != nil {
			return err
		}
		l.Time = t
	case fRequest:
		m, rest, ok := bytes.Cut(v, []byte{' '})
		if !ok {
			return errRequest
		}
		uri, _, _ := bytes.Cut(rest, []byte{' '})
		if len(m) == 0 || len(uri) == 0 {
			return errRequest
		}
		l.Method, l.Path = m, pathOf(uri)
	case fMethod:
		l.Method = v
	case fURI:
		l.Path = pathOf(v)
	}
	return nil
}

func isDash(v []byte) bool { return len(v) == 0 || len(v) == 1 && v[0] == '-' }

// pathOf returns uri without its query, and the path of an absolute URI.
func pathOf(uri []byte) []byte {
	if i := bytes.IndexByte(uri, '?'); i >= 0 {
		uri = uri[:i]
	}
	if len(uri) > 0 && uri[0] != '/' {
		if i := bytes.Index(uri, []byte("://")); i >= 0 {
			rest := uri[i+3:]
			if j := bytes.IndexByte(rest, '/'); j >= 0 {
				return rest[j:]
			}
			return []byte("/")
		}
	}
	return uri
}

// clip returns v, cut to 40 bytes, for an error message.
func clip(v []byte) string {
	if len(v) > 40 {
		return string(v[:40]) + "..."
	}
	return string(v)
}

var months = map[string]time.Month{
	"Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "May": 5, "Jun": 6,
	"Jul": 7, "Aug": 8, "Sep": 9, "Oct": 10, "Nov": 11, "Dec": 12,
}

// parseTimeLocal reads nginx's $time_local and Apache's %t:
// 10/Oct/2000:13:55:36 -0700.
func parseTimeLocal(v []byte) (time.Time, error) {
	bad := errors.New("want DD/Mon/YYYY:HH:MM:SS +ZZZZ")
	if len(v) != 26 || v[2] != '/' || v[6] != '/' || v[11] != ':' || v[14] != ':' || v[17] != ':' || v[20] != ' ' {
		return time.Time{}, bad
	}
	day, ok1 := digits(v[0:2])
	mon, ok2 := months[string(v[3:6])]
	year, ok3 := digits(v[7:11])
	hour, ok4 := digits(v[12:14])
	minute, ok5 := digits(v[15:17])
	sec, ok6 := digits(v[18:20])
	zh, ok7 := digits(v[22:24])
	zm, ok8 := digits(v[24:26])
	sign := v[21]
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || !ok7 || !ok8 || (sign != '+' && sign != '-') ||
		day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 60 || zm > 59 {
		return time.Time{}, bad
	}
	off := (zh*60 + zm) * 60
	if sign == '-' {
		off = -off
	}
	// The seconds since the epoch, in UTC, without time.Date's zone work.
	t := time.Date(year, mon, day, hour, minute, sec, 0, time.UTC)
	return t.Add(-time.Duration(off) * time.Second), nil
}

// digits reads a run of decimal digits.
func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, len(b) > 0
}

// parseEpoch reads seconds since the epoch, with an optional fraction
// ($msec: 1700000000.123).
func parseEpoch(v []byte) (time.Time, error) {
	bad := errors.New("not seconds since the epoch")
	secs, frac, _ := bytes.Cut(v, []byte{'.'})
	if len(secs) > 11 || len(frac) > 9 {
		return time.Time{}, bad
	}
	sec, ok := digits(secs)
	if !ok {
		return time.Time{}, bad
	}
	ns := 0
	if len(frac) > 0 {
		if ns, ok = digits(frac); !ok {
			return time.Time{}, bad
		}
		for range 9 - len(frac) {
			ns *= 10
		}
	}
	return time.Unix(int64(sec), int64(ns)).UTC(), nil
}
