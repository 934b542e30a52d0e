// Package wslimit limits a WebSocket API with a decaying balance of message
// costs, the XRP Ledger server's model (see package balance): every
// message a caller sends is charged to its balance, and so, if asked, is
// every message the server pushes to it; a caller at or above the warning
// threshold is told to add "warning":"load" to its replies, and a caller
// at or above the drop threshold is disconnected with close code 1008
// (policy violation) and the reason "threshold exceeded", as rippled does.
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
//		err = conn.WriteJSON(ctx, core.WarnJSON(d.Load, reply))
//	}
//
// Use it for a WebSocket API; for JSON-RPC over HTTP, the middlewares'
// NewBalance charge the same balance per request. The WebSocket
// implementation is github.com/coder/websocket, which has no dependencies
// of its own.
package wslimit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// CloseTryAgainLater is the close code that ends a connection whose message
// was refused because the store failed in a scope that fails closed
// (balance.Config.FailClosed): 1013, try again later.
const CloseTryAgainLater = websocket.StatusTryAgainLater

// closedReason is the reason of the close of CloseTryAgainLater.
const closedReason = "rate limits unavailable"

// ErrFailedClosed is the error [Conn.Charge] and [Conn.Push] return when
// the store failed in a scope that fails closed and the connection was
// closed with [CloseTryAgainLater]. Test for it with errors.Is.
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
}

// Validate reports the problem with c, if any: a missing Guard.
func (c Config) Validate() error {
	if c.Guard == nil {
		return errors.New("wslimit: no Guard: build one with balance.New")
	}
	return nil
}

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
	return &Conn{ws: ws, balance: s.cfg.Guard, caller: caller, exempt: exempt}, nil
}

// A Conn is one caller's WebSocket connection. Read from one goroutine at
// a time; Charge, WriteJSON and Push may be called concurrently with Read
// and with each other.
type Conn struct {
	ws      *websocket.Conn
	balance *balance.Guard
	caller  core.Caller
	exempt  bool
}

// Caller returns whose balance the connection's messages are charged to.
func (c *Conn) Caller() core.Caller { return c.caller }

// WS returns the underlying connection, for what Conn does not wrap (ping,
// read limits, subprotocols).
func (c *Conn) WS() *websocket.Conn { return c.ws }

// Read returns the next message the caller sent, text or binary. It does
// not charge it: pick its cost and call [Conn.Charge].
func (c *Conn) Read(ctx context.Context) ([]byte, error) {
	_, msg, err := c.ws.Read(ctx)
	return msg, err
}

// Charge charges a message of the given cost to the caller's balance, as
// [balance.Guard.Charge] does (a cost of 0 charges nothing but still
// refuses a dropped caller; the scope's cost classes name the usual costs,
// Guard.Config().Costs), and returns the decision: add "warning":"load" to
// the reply when d.Load ([core.WarnJSON]). When the caller is dropped,
// Charge closes the connection with code 1008 and reason "threshold
// exceeded" and returns [ErrDropped]; the guard logged the drop once, when
// the caller became dropped (see [balance.Guard.Charge]). A store failure
// allows the message (fail open), unless the scope fails closed: Charge
// then closes the connection with code 1013 ([CloseTryAgainLater]) and
// returns [ErrFailedClosed].
func (c *Conn) Charge(ctx context.Context, cost int64) (*balance.Decision, error) {
	if c.exempt {
		return c.balance.Exempt(ctx, c.caller), nil
	}
	d := c.balance.Charge(ctx, c.caller, cost)
	if d.Outcome == core.OutcomeFailedClosed {
		_ = c.ws.Close(CloseTryAgainLater, closedReason)
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

// Close closes the connection with a normal closure.
func (c *Conn) Close() error {
	return c.ws.Close(websocket.StatusNormalClosure, "")
}
