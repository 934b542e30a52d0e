package portal

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"

	"github.com/ratescope/ratescope/core"
)

// AdminLimitsRoute is the route prefix of DELETE /admin/limits/SCOPE, which
// -admin-token enables: SCOPE is "api", [ScopeLogin],
// autocomplete.NAME or [ScopeLedger].
const AdminLimitsRoute = "/admin/limits/"

// AdminTokenHeader is the header that carries the -admin-token.
const AdminTokenHeader = "X-Admin-Token"

// AdminError is the JSON body of a refused DELETE /admin/limits/SCOPE.
type AdminError struct {
	// Error says what was wrong.
	Error string `json:"error"`
}

// Admin reports whether the admin route is enabled: -admin-token was given.
func (a *App) Admin() bool { return a.adminToken != "" }

// adminTokenOK reports whether got is the -admin-token, compared in
// constant time: false when there is none.
func (a *App) adminTokenOK(got string) bool {
	return a.Admin() && subtle.ConstantTimeCompare([]byte(got), []byte(a.adminToken)) == 1
}

// ResetLimits serves DELETE /admin/limits/SCOPE?caller=ADDRESS or
// ?user=NAME, scope being the route's SCOPE: it clears that caller's counts
// in scope ([App.Reset]) and answers 204. The answers, in the order
// they are checked: 403 without the header X-Admin-Token equal to
// -admin-token (compared in constant time), changing nothing; 400 for
// neither or both of caller and user, an empty user or an address that is
// not one; 404 for an unknown scope; 500 if the store failed. Every answer
// but 204 has a JSON body {"error": "..."}. The route is not limited.
//
// ADDRESS is an IPv4 address or an IPv6 address, whose /64 is the network
// counted. A framework mounts it only when [App.Admin] reports true.
func (a *App) ResetLimits(w http.ResponseWriter, r *http.Request, scope string) {
	if !a.adminTokenOK(r.Header.Get(AdminTokenHeader)) {
		writeJSON(w, http.StatusForbidden, AdminError{Error: "missing or wrong " + AdminTokenHeader})
		return
	}
	q := r.URL.Query()
	if q.Has("caller") == q.Has("user") {
		writeJSON(w, http.StatusBadRequest, AdminError{Error: "give one of caller=ADDRESS and user=NAME"})
		return
	}
	caller := core.UserCaller(q.Get("user"))
	if q.Has("caller") {
		addr, err := netip.ParseAddr(q.Get("caller"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, AdminError{Error: fmt.Sprintf("caller %q: want an IPv4 or IPv6 address", q.Get("caller"))})
			return
		}
		caller = a.Limiter.AddrCaller(addr)
	} else if q.Get("user") == "" {
		writeJSON(w, http.StatusBadRequest, AdminError{Error: "user: want a user name"})
		return
	}
	err := a.Reset(r.Context(), scope, caller)
	switch {
	case errors.Is(err, core.ErrUnknownScope):
		writeJSON(w, http.StatusNotFound, AdminError{Error: fmt.Sprintf("unknown scope %q", scope)})
		return
	case err != nil:
		a.logger.LogAttrs(r.Context(), slog.LevelError, "portal: reset failed", slog.String("scope", scope), slog.String("caller", caller.String()), slog.String("error", err.Error()))
		writeJSON(w, http.StatusInternalServerError, AdminError{Error: "the store failed"})
		return
	}
	a.logger.LogAttrs(r.Context(), slog.LevelInfo, "portal: limits reset", slog.String("scope", scope), slog.String("caller", caller.String()))
	w.WriteHeader(http.StatusNoContent)
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
