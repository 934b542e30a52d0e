package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// JSONFields names the fields of a JSON log line. Empty names take the
// defaults of [DefaultJSONFields].
type JSONFields struct {
	Time      string // RFC 3339 text, or seconds since the epoch (a number or a string)
	Addr      string // the peer address the writer of the log saw
	Forwarded string // the X-Forwarded-For header it received
	User      string // the signed-in user; empty or "-" for none
	Method    string // the request's method
	Path      string // the request's path or URI; its query is ignored
	Status    string // the response's status (read, not used)
}

// DefaultJSONFields returns the field names of nginx's variables:
// time, remote_addr, http_x_forwarded_for, remote_user, request_method,
// request_uri and status.
func DefaultJSONFields() JSONFields {
	return JSONFields{
		Time: "time", Addr: "remote_addr", Forwarded: "http_x_forwarded_for", User: "remote_user",
		Method: "request_method", Path: "request_uri", Status: "status",
	}
}

// ParseJSONFields reads NAME=FIELD pairs, comma-separated, over the
// defaults: "time=ts,addr=client,path=uri". The names are time, addr,
// xff, user, method, path and status.
func ParseJSONFields(s string) (JSONFields, error) {
	f := DefaultJSONFields()
	var errs []error
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok || v == "" {
			errs = append(errs, fmt.Errorf("json field %q: want NAME=FIELD", part))
			continue
		}
		switch k {
		case "time":
			f.Time = v
		case "addr":
			f.Addr = v
		case "xff":
			f.Forwarded = v
		case "user":
			f.User = v
		case "method":
			f.Method = v
		case "path":
			f.Path = v
		case "status":
			f.Status = v
		default:
			errs = append(errs, fmt.Errorf("json field %q: %q is none of time, addr, xff, user, method, path, status", part, k))
		}
	}
	return f, errors.Join(errs...)
}

// String returns the fields in the form ParseJSONFields reads.
func (f JSONFields) String() string {
	return "time=" + f.Time + ",addr=" + f.Addr + ",xff=" + f.Forwarded + ",user=" + f.User +
		",method=" + f.Method + ",path=" + f.Path + ",status=" + f.Status
}

// jsonParser reads JSON lines: one object a line, its fields at the top
// level.
type jsonParser struct {
	names [fieldCount][]byte
	buf   [fieldCount][]byte // decoded strings with escapes
}

// The fields of a JSON line, as indexes.
const (
	jTime = iota
	jAddr
	jForwarded
	jUser
	jMethod
	jPath
	fieldCount
)

func newJSONParser(f JSONFields) (*jsonParser, error) {
	d := DefaultJSONFields()
	names := [fieldCount]string{f.Time, f.Addr, f.Forwarded, f.User, f.Method, f.Path}
	defaults := [fieldCount]string{d.Time, d.Addr, d.Forwarded, d.User, d.Method, d.Path}
	p := &jsonParser{}
	for i, n := range names {
		if n == "" {
			n = defaults[i]
		}
		p.names[i] = []byte(n)
	}
	return p, nil
}

var (
	errJSON     = errors.New("not a JSON object")
	errJSONAddr = errors.New("no address field")
	errJSONPath = errors.New("no path field")
)

// Parse implements [Parser]. It reads the top-level fields of the object
// and skips nested values.
func (p *jsonParser) Parse(line []byte, l *Line) error {
	*l = Line{}
	var vals [fieldCount][]byte
	var timeNum bool
	s := skipSpace(line)
	if len(s) == 0 || s[0] != '{' {
		return errJSON
	}
	s = skipSpace(s[1:])
	if len(s) > 0 && s[0] == '}' {
		return errJSONAddr
	}
	for {
		key, rest, esc, err := jsonString(s)
		if err != nil {
			return err
		}
		if esc {
			key = p.unescape(key)
		}
		s = skipSpace(rest)
		if len(s) == 0 || s[0] != ':' {
			return errJSON
		}
		s = skipSpace(s[1:])
		idx := -1
		for i := range p.names {
			if bytes.Equal(key, p.names[i]) {
				idx = i
				break
			}
		}
		if len(s) > 0 && s[0] == '"' {
			v, rest, esc, err := jsonString(s)
			if err != nil {
				return err
			}
			if idx >= 0 {
				if esc {
					p.buf[idx] = unescapeInto(p.buf[idx][:0], s[:len(s)-len(rest)])
					v = p.buf[idx]
				}
				vals[idx] = v
			}
			s = rest
		} else {
			end, err := skipValue(s)
			if err != nil {
				return err
			}
			if idx >= 0 {
				v := s[:end]
				if string(v) != "null" {
					vals[idx] = v
					if idx == jTime {
						timeNum = true
					}
				}
			}
			s = s[end:]
		}
		s = skipSpace(s)
		if len(s) == 0 {
			return errJSON
		}
		if s[0] == '}' {
			break
		}
		if s[0] != ',' {
			return errJSON
		}
		s = skipSpace(s[1:])
	}
	if len(vals[jTime]) == 0 {
		return errNoTime
	}
	var err error
	if timeNum || isNumber(vals[jTime]) {
		l.Time, err = parseEpoch(vals[jTime])
	} else {
		l.Time, err = time.Parse(time.RFC3339Nano, string(vals[jTime]))
		l.Time = l.Time.UTC()
		if err != nil {
			l.Time, err = parseTimeLocal(vals[jTime])
		}
	}
	if err != nil {
		return fmt.Errorf("time %q: want RFC 3339, $time_local or seconds since the epoch", clip(vals[jTime]))
	}
	if len(vals[jAddr]) == 0 {
		return errJSONAddr
	}
	l.Addr = vals[jAddr]
	if !isDash(vals[jForwarded]) {
		l.Forwarded = vals[jForwarded]
	}
	if !isDash(vals[jUser]) {
		l.User = vals[jUser]
	}
	l.Method = vals[jMethod]
	path := vals[jPath]
	if len(path) == 0 {
		return errJSONPath
	}
	l.Path = pathOf(path)
	return nil
}

// isNumber reports whether v is digits with at most one '.'.
func isNumber(v []byte) bool {
	return len(v) > 0 && v[0] >= '0' && v[0] <= '9' && bytes.Count(v, []byte(".")) <= 1 &&
		len(bytes.Trim(v, "0123456789.")) == 0
}

// unescape decodes a key with escapes, rarely needed.
func (p *jsonParser) unescape(raw []byte) []byte {
	return unescapeInto(nil, append(append([]byte{'"'}, raw...), '"'))
}

// unescapeInto appends the string the JSON text quoted decodes to.
func unescapeInto(dst, quoted []byte) []byte {
	var s string
	if json.Unmarshal(quoted, &s) != nil {
		return append(dst, quoted...)
	}
	return append(dst, s...)
}

func skipSpace(s []byte) []byte {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t' || s[0] == '\r' || s[0] == '\n') {
		s = s[1:]
	}
	return s
}

// jsonString reads the string at the start of s: its raw content, the
// text after it, and whether it holds escapes.
func jsonString(s []byte) (v, rest []byte, esc bool, err error) {
	if len(s) == 0 || s[0] != '"' {
		return nil, nil, false, errJSON
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			esc = true
			i++
		case '"':
			return s[1:i], s[i+1:], esc, nil
		}
	}
	return nil, nil, false, errJSON
}

// skipValue returns the length of the value at the start of s that is not
// a string: a number, true, false, null, an object or an array.
func skipValue(s []byte) (int, error) {
	if len(s) == 0 {
		return 0, errJSON
	}
	if s[0] != '{' && s[0] != '[' {
		i := 0
		for i < len(s) && s[i] != ',' && s[i] != '}' && s[i] != ' ' && s[i] != '\t' && s[i] != ']' {
			i++
		}
		if i == 0 {
			return 0, errJSON
		}
		return i, nil
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			_, rest, _, err := jsonString(s[i:])
			if err != nil {
				return 0, err
			}
			i = len(s) - len(rest) - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		}
	}
	return 0, errJSON
}
