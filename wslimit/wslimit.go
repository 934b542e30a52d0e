// Package wslimit limits a WebSocket API with a decaying balance of message
// costs, the XRP Ledger server's model (see package balance): every
// message a caller sends is charged to its balance, and so, if asked, is
// every message the server pushes to it; a caller at or above the warning
// threshold is warned, at most once per the policy's WarnEvery: the handler
// adds "warning":"load" to that reply ([balance.Decision.Load]); a caller
// at or above the drop threshold is disconnected with close code 1008
// (policy violation) and the reason "threshold exceeded", as rippled does.
// A message larger than Config.ReadLimit (32 KiB by default) is charged as
// a heavy request ([balance.CostHeavy]) and ends the connection with code
// 1009.
//
// It works on plain net/http, so that Gin and Echo handlers, and any other,
// use it alike: the handler finds the caller and whether it is exempt as
// its framework's middleware would, and passes them to [Server.Accept].
//
//	conn, err := ws.Accept(w, r, caller, exempt)
//	for {
//		msg, err := conn.Read(ctx)
//		// ... parse msg, pick its cost ...
//		d, err := conn.Charge(ctx, cost) // ErrDropped: closed with 1008
//		// ... serve it ...
//		err = conn.WriteJSON(ctx, balance.WarnJSON(d.Load, reply))
//	}
//
// Use it for a WebSocket API; for JSON-RPC over HTTP, a handler charges
// the same balance per request with [balance.Guard.Charge]. The WebSocket
// implementation is github.com/coder/websocket, which has no dependencies
// of its own.
package wslimit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"

	"github.com/coder/websocket"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
)

// ClosePolicyViolation is the close code that ends a dropped caller's
// connection: 1008, policy violation.
const ClosePolicyViolation = websocket.StatusPolicyViolation

// closeReason is the reason of the close that ends a dropped caller's
// connection, as the XRP Ledger server (rippled) gives it.
const closeReason = "threshold exceeded"

// ErrDropped is the error [Conn.Charge] and [Conn.Push] return once the
// caller is dropped and the connection closed. Test for it with errors.Is.
var ErrDropped = errors.New("wslimit: caller dropped: " + closeReason)

// closedReason is the reason of the close that ends a connection whose
// message was refused because the store failed in a scope that fails
// closed, with code 1013, try again later.
const closedReason = "rate limits unavailable"

// ErrFailedClosed is the error [Conn.Charge] and [Conn.Push] return when
// the store failed in a scope that fails closed
// (balance.Config.FailMode core.FailClosed) and the connection was closed
// with code 1013 (try again later). Test for it with errors.Is.
var ErrFailedClosed = errors.New("wslimit: store failed, the scope fails closed: " + closedReason)

// Config configures a [Server]. Zero fields take the defaults stated on
// each.
type Config struct {
	// Guard charges the messages to the callers' balances in its scope.
	// Required.
	Guard *balance.Guard

	// AcceptOptions are passed to websocket.Accept: origins, subprotocols,
	// compression. Default: nil, the library's defaults (same origin only).
	AcceptOptions *websocket.AcceptOptions

	// ReadLimit is the largest message, in bytes, that [Conn.Read]
	// accepts. A larger one is charged as a heavy request
	// ([balance.CostHeavy]), and the connection is closed with code 1009
	// (message too big). Default: 32768 (32 KiB, the WebSocket library's).
	// Change it here, not on the connection (Conn.WS), whose own limit
	// Accept sets just above it.
	ReadLimit int64
}

// defaultReadLimit is the default of Config.ReadLimit: 32 KiB.
const defaultReadLimit = 32768

// Validate reports every problem with c, joined: a missing Guard, a
// ReadLimit below 0.
func (c Config) Validate() error {
	var errs []error
	if c.Guard == nil {
		errs = append(errs, errors.New("wslimit: no Guard: build one with balance.New"))
	}
	if c.ReadLimit < 0 {
		errs = append(errs, fmt.Errorf("wslimit: ReadLimit %d: want 0 (32768) or more", c.ReadLimit))
	}
	return errors.Join(errs...)
}

// ErrTooBig is the error [Conn.Read] returns when the caller sent a
// message larger than Config.ReadLimit: the message was charged as a heavy
// request and the connection closed with code 1009 (message too big).
// Test for it with errors.Is.
var ErrTooBig = errors.New("wslimit: message too big")

// A Server accepts WebSocket connections whose messages are charged to a
// balance scope. It is safe for concurrent use. Build it with [New].
type Server struct {
	cfg Config
}

// New returns a Server for cfg, or the error of [Config.Validate].
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ReadLimit == 0 {
		cfg.ReadLimit = defaultReadLimit
	}
	// Read reads one byte past the limit: keep that byte countable.
	cfg.ReadLimit = min(cfg.ReadLimit, math.MaxInt64-1)
	return &Server{cfg: cfg}, nil
}

// Accept upgrades the request to a WebSocket connection of caller; an
// exempt caller (an administrator, by the same predicate as the window
// limits) is never charged, warned or dropped. On error Accept has
// written an HTTP error response, as websocket.Accept does.
func (s *Server) Accept(w http.ResponseWriter, r *http.Request, caller core.Caller, exempt bool) (*Conn, error) {
	ws, err := websocket.Accept(w, r, s.cfg.AcceptOptions)
	if err != nil {
		return nil, fmt.Errorf("wslimit: accept: %w", err)
	}
	// The library's own limit, just above ours, is never reached: Read
	// stops one byte past ReadLimit.
	ws.SetReadLimit(s.cfg.ReadLimit + 1)
	return &Conn{ws: ws, balance: s.cfg.Guard, caller: caller, exempt: exempt, limit: s.cfg.ReadLimit}, nil
}

// A Conn is one caller's WebSocket connection. Read from one goroutine at
// a time; Charge, WriteJSON and Push may be called concurrently with Read
// and with each other.
type Conn struct {
	ws      *websocket.Conn
	balance *balance.Guard
	caller  core.Caller
	exempt  bool
	limit   int64
}

// WS returns the underlying connection, for what Conn does not wrap
// (closing it, ping, subprotocols). Its read limit is Config.ReadLimit's business: a message
// above it is charged and refused by [Conn.Read].
func (c *Conn) WS() *websocket.Conn { return c.ws }

// Read returns the next message the caller sent, text or binary. It does
// not charge it: pick its cost and call [Conn.Charge].
//
// A message larger than Config.ReadLimit is not returned: Read charges it
// as a heavy request, [balance.CostHeavy] (as [Conn.Charge] does, so that
// a caller cannot send large messages for free), closes the connection
// with code 1009 (message too big) and returns [ErrTooBig]; or, if
// the charge finds the caller dropped, closes it with 1008 and returns
// [ErrDropped].
func (c *Conn) Read(ctx context.Context) ([]byte, error) {
	_, r, err := c.ws.Reader(ctx)
	if err != nil {
		return nil, err
	}
	msg, err := io.ReadAll(io.LimitReader(r, c.limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(msg)) <= c.limit {
		return msg, nil
	}
	if _, err := c.Charge(ctx, balance.CostHeavy); err != nil {
		return nil, err
	}
	_ = c.ws.Close(websocket.StatusMessageTooBig, fmt.Sprintf("message larger than %d bytes", c.limit))
	return nil, ErrTooBig
}

// Charge charges a message of the given cost to the caller's balance, as
// [balance.Guard.Charge] does (a cost of 0 charges nothing but still
// refuses a dropped caller; [balance.CostReference] and the other Cost
// constants name the usual costs), and returns the decision: add "warning":"load" to
// the reply when d.Load ([balance.WarnJSON]). When the caller is dropped,
// Charge closes the connection with code 1008 and reason "threshold
// exceeded" and returns [ErrDropped]; the guard logged the drop once, when
// the caller became dropped (see [balance.Guard.Charge]). A store failure
// allows the message (fail open), unless the scope fails closed: Charge
// then closes the connection with code 1013 (try again later) and returns
// [ErrFailedClosed].
func (c *Conn) Charge(ctx context.Context, cost int64) (*balance.Decision, error) {
	if c.exempt {
		return c.balance.Exempt(ctx, c.caller), nil
	}
	d := c.balance.Charge(ctx, c.caller, cost)
	if d.Outcome == core.OutcomeFailedClosed {
		_ = c.ws.Close(websocket.StatusTryAgainLater, closedReason)
		return d, ErrFailedClosed
	}
	if !d.Allowed {
		_ = c.ws.Close(ClosePolicyViolation, closeReason)
		return d, ErrDropped
	}
	return d, nil
}

// WriteJSON writes v as one JSON text message.
func (c *Conn) WriteJSON(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("wslimit: %w", err)
	}
	return c.ws.Write(ctx, websocket.MessageText, b)
}

// Push writes a message the server sends on its own (a subscription's
// update, a path search's follow-up) after charging its cost as
// [Conn.Charge] does, as rippled charges follow-up messages. A dropped
// caller is sent nothing: the connection is closed as for Conn.Charge. A
// message that is never charged is written with [Conn.WriteJSON].
func (c *Conn) Push(ctx context.Context, cost int64, v any) error {
	if _, err := c.Charge(ctx, cost); err != nil {
		return err
	}
	return c.WriteJSON(ctx, v)
}
