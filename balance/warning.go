package balance

import (
	"bytes"
	"encoding/json"
	"errors"
)

// WarnJSON returns v, to be encoded as JSON, with "warning":"load" added at
// the top level of its object when load is true: the XRP Ledger server's
// way of telling a caller that it is near the limit. Pass the decision's
// Load ([Decision.Load], or a window decision's, core.Decision.Load). v must encode as a JSON
// object; when load is false, v is returned as it is.
//
// For a JSON-RPC reply, wrap the result object: the warning then goes
// inside "result", where rippled puts it for JSON-RPC.
func WarnJSON(load bool, v any) any {
	if !load {
		return v
	}
	return warned{v}
}

// warned is a value whose JSON object gets "warning":"load".
type warned struct{ v any }

var errNotObject = errors.New("ratescope/balance: WarnJSON: the value does not encode as a JSON object")

// MarshalJSON encodes the value and adds the warning as its first member.
func (w warned) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(w.v)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '{' {
		return nil, errNotObject
	}
	out := make([]byte, 0, len(b)+20)
	out = append(out, `{"warning":"load"`...)
	if rest := bytes.TrimSpace(b[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}
