package portal

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/wslimit"
)

// ScopeLedger is the balance scope of GET /ws and POST /rpc: as in the XRP
// Ledger server, a caller has one balance for both APIs.
const ScopeLedger = "ledger"

// maxRPCBody is the most bytes of a JSON-RPC body read to find its method.
const maxRPCBody = 1 << 20

// ledgerConfig returns the balance scope of the ledger APIs, in store:
// rippled's figures, with the thresholds of -warn and -drop when set (a
// -drop below the default warning, without -warn, warns at the drop), and
// failing closed if -fail-closed names it. A -warn above the drop
// threshold is left for balance.New to refuse.
func ledgerConfig(o Options, lim *core.Limiter, store balance.Store) balance.Config {
	cfg := balance.DefaultConfig()
	cfg.Limiter, cfg.Store, cfg.Scope = lim, store, ScopeLedger
	if o.Drop != 0 {
		cfg.Policy.Drop = o.Drop
	}
	switch {
	case o.Warn != 0:
		cfg.Policy.Warn = o.Warn
	case cfg.Policy.Drop < cfg.Policy.Warn:
		// -drop alone below the default warning: warned at the drop, so
		// that no caller is dropped without a warning.
		cfg.Policy.Warn = cfg.Policy.Drop
	}
	if slices.Contains(o.FailClosed, ScopeLedger) {
		cfg.FailMode = core.FailClosed
	}
	return cfg
}

// windowScopes returns the scopes of -fail-closed that are the limiter's:
// all but the balance scope.
func windowScopes(names []string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == ScopeLedger })
}

// ledger is the part of the App that serves /ws and /rpc.
type ledger struct {
	guard  *balance.Guard
	ws     *wslimit.Server
	policy balance.Policy
}

// initLedger builds the balance scope of /ws and /rpc; a bad -warn or
// -drop is a usage error that names them.
func (a *App) initLedger(o Options, store balance.Store) error {
	cfg := ledgerConfig(o, a.Limiter, store)
	guard, err := balance.New(cfg)
	if err != nil {
		return usage("-warn %d, -drop %d: %w", cfg.Policy.Warn, cfg.Policy.Drop, err)
	}
	ws, err := wslimit.New(wslimit.Config{Guard: guard})
	if err != nil {
		return err
	}
	a.ledger = ledger{guard: guard, ws: ws, policy: cfg.Policy}
	return nil
}

// Ledger returns the policy of the balance that /ws and /rpc charge, as
// the portal configured it: rippled's figures with the thresholds of -warn
// and -drop, and WarnCost and DropCost left 0 for balance.New to scale
// with the thresholds.
func (a *App) Ledger() balance.Policy { return a.ledger.policy }

// Reset clears caller's counts in scope: its balance in [ScopeLedger]
// (balance.Guard.Reset), its windows in any other scope
// (core.Limiter.Reset, whose error wraps core.ErrUnknownScope for a scope
// the portal does not have). DELETE /admin/limits/SCOPE and the live
// view's reset buttons call it.
func (a *App) Reset(ctx context.Context, scope string, caller core.Caller) error {
	if scope == ScopeLedger {
		return a.ledger.guard.Reset(ctx, caller)
	}
	return a.Limiter.Reset(ctx, scope, caller)
}

// ChargeRPC charges the JSON-RPC request r of the signed-in user ("" if
// anonymous) to its caller's balance, at the cost of its method
// ([App.RPCCost]); admins are never charged. It sets
// "Ratescope-Warning: load" when the caller is warned and, when the
// caller is dropped or the store failed and the scope fails closed,
// answers 503 "Server is overloaded" and returns false. The handler
// answers otherwise, with "warning":"load" inside result when d.Load
// ([RPCReply]).
func (a *App) ChargeRPC(w http.ResponseWriter, r *http.Request, user string) (d *balance.Decision, ok bool) {
	caller := a.Limiter.Caller(r, core.UserCaller(user))
	if a.Exempt(caller) {
		return a.ledger.guard.Exempt(r.Context(), caller), true
	}
	d = a.ledger.guard.Charge(r.Context(), caller, a.RPCCost(r))
	d.SetHeaders(w.Header())
	if !d.Allowed {
		balance.WriteOverloaded(w)
		return d, false
	}
	return d, true
}

// CommandCost returns the cost of a command of the ledger APIs: ping and
// server_info cost the reference 20; ledger and account_tx are medium,
// 400; path_find and ripple_path_find are heavy, 3000; anything else is
// malformed, 100.
func (a *App) CommandCost(name string) int64 {
	switch name {
	case "ping", "server_info":
		return balance.CostReference
	case "ledger", "account_tx":
		return balance.CostMedium
	case "path_find", "ripple_path_find":
		return balance.CostHeavy
	}
	return balance.CostMalformed
}

// RPCCost returns the cost of the JSON-RPC request of r, by the method its
// body names; it puts the body back for the handler. A body that is not
// a JSON object with a method costs as a malformed request.
func (a *App) RPCCost(r *http.Request) int64 {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxRPCBody))
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &req) != nil {
		return balance.CostMalformed
	}
	return a.CommandCost(req.Method)
}

// RPCReply is the body of a successful POST /rpc: {"result":{"status":
// "success"}}, with "warning":"load" inside result when load is true.
func RPCReply(load bool) any {
	return map[string]any{"result": balance.WarnJSON(load, map[string]string{"status": "success"})}
}

// wsReply is the reply to one WebSocket command.
type wsReply struct {
	ID     any      `json:"id"`
	Type   string   `json:"type"`
	Status string   `json:"status"`
	Result struct{} `json:"result"`
}

// ServeWS serves GET /ws for the signed-in user ("" if anonymous): it
// upgrades to a WebSocket and answers each message {"id":N,"command":
// "NAME"} with {"id":N,"type":"response","status":"success","result":{}},
// with "warning":"load" when the caller is at or above the warning
// threshold. Each message is charged the cost of its command; a dropped
// caller is disconnected with close code 1008, "threshold exceeded".
// Admins are never charged.
func (a *App) ServeWS(w http.ResponseWriter, r *http.Request, user string) {
	caller := a.Limiter.Caller(r, core.UserCaller(user))
	conn, err := a.ledger.ws.Accept(w, r, caller, a.Exempt(caller))
	if err != nil {
		return
	}
	defer func() { _ = conn.WS().CloseNow() }()
	ctx := r.Context()
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var req struct {
			ID      any    `json:"id"`
			Command string `json:"command"`
		}
		cost := balance.CostMalformed
		if json.Unmarshal(msg, &req) == nil {
			cost = a.CommandCost(req.Command)
		}
		d, err := conn.Charge(ctx, cost)
		if err != nil {
			return // dropped: closed with 1008
		}
		if err := conn.WriteJSON(ctx, balance.WarnJSON(d.Load, wsReply{ID: req.ID, Type: "response", Status: "success"})); err != nil {
			return
		}
	}
}
