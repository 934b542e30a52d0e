package portal

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/wslimit"
)

// ScopeLedger is the balance scope of GET /ws and POST /rpc: as in the XRP
// Ledger server, a caller has one balance for both APIs.
const ScopeLedger = "ledger"

// maxRPCBody is the most bytes of a JSON-RPC body read to find its method.
const maxRPCBody = 1 << 20

// ledgerScope returns the balance scope of the ledger APIs: rippled's
// figures, with the thresholds of -warn and -drop when set.
func ledgerScope(o Options) core.BalanceScope {
	s := core.BalanceScope{Name: ScopeLedger, BalancePolicy: core.DefaultBalancePolicy()}
	if o.Warn != 0 {
		s.Warn = o.Warn
	}
	if o.Drop != 0 {
		s.Drop = o.Drop
	}
	return s
}

// ledger is the part of the App that serves /ws and /rpc.
type ledger struct {
	ws    *wslimit.Server
	costs core.CostClasses
}

func (a *App) initLedger() error {
	ws, err := wslimit.New(wslimit.Config{Limiter: a.Limiter, Scope: ScopeLedger})
	if err != nil {
		return err
	}
	a.ledger = ledger{ws: ws, costs: ws.Scope().Costs}
	return nil
}

// Ledger returns the balance scope that /ws and /rpc charge, defaults
// applied.
func (a *App) Ledger() core.BalanceScope { return a.ledger.ws.Scope() }

// CommandCost returns the cost of a command of the ledger APIs: ping and
// server_info cost the reference 20; ledger and account_tx are medium,
// 400; path_find and ripple_path_find are heavy, 3000; anything else is
// malformed, 100.
func (a *App) CommandCost(name string) int64 {
	c := a.ledger.costs
	switch name {
	case "ping", "server_info":
		return c.Reference
	case "ledger", "account_tx":
		return c.Medium
	case "path_find", "ripple_path_find":
		return c.Heavy
	}
	return c.Malformed
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
		return a.ledger.costs.Malformed
	}
	return a.CommandCost(req.Method)
}

// RPCReply is the body of a successful POST /rpc: {"result":{"status":
// "success"}}, with "warning":"load" inside result when load is true.
func RPCReply(load bool) any {
	return map[string]any{"result": core.WarnJSON(load, map[string]string{"status": "success"})}
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
		cost := a.ledger.costs.Malformed
		if json.Unmarshal(msg, &req) == nil {
			cost = a.CommandCost(req.Command)
		}
		d, err := conn.Charge(ctx, cost)
		if err != nil {
			return // dropped: closed with 1008
		}
		if err := conn.WriteJSON(ctx, core.WarnJSON(d.Load, wsReply{ID: req.ID, Type: "response", Status: "success"})); err != nil {
			return
		}
	}
}
