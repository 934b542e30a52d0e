package portal

import (
	"net/http"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/liveview"
)

// LiveViewRoute is the path of the live view (package liveview), which
// -admin-token enables: GET for the page (?format=json for its figures),
// POST for its reset buttons.
const LiveViewRoute = "/debug/limits"

// observeLive makes the live view, on cfg's clock, when -admin-token is
// given and adds its hook to cfg's, if any (the -metrics one): nothing
// otherwise.
func (a *App) observeLive(cfg *core.Config) error {
	if !a.Admin() {
		return nil
	}
	view, err := liveview.New(liveview.Config{Now: cfg.Now})
	if err != nil {
		return err
	}
	a.live = view
	cfg.Observe = core.Observers(cfg.Observe, view.Observe)
	return nil
}

// LiveView serves the live view at [LiveViewRoute] to the holder of
// -admin-token, in the header X-Admin-Token or as the password of HTTP
// Basic authentication (any user name), which a browser asks for: 401
// with WWW-Authenticate and a JSON body {"error": "..."} for a missing or
// wrong token (compared in constant time). The view's reset buttons reset
// a caller as DELETE /admin/limits/SCOPE does. The route is not limited. A
// framework mounts it, for GET and POST, only when [App.Admin] reports
// true.
func (a *App) LiveView(w http.ResponseWriter, r *http.Request) {
	got := r.Header.Get(AdminTokenHeader)
	if _, password, ok := r.BasicAuth(); ok && got == "" {
		got = password
	}
	if a.live == nil || !a.adminTokenOK(got) {
		w.Header().Set("WWW-Authenticate", `Basic realm="ratescope live view", charset="UTF-8"`)
		writeJSON(w, http.StatusUnauthorized, AdminError{Error: "missing or wrong " + AdminTokenHeader + " (or Basic password)"})
		return
	}
	a.live.ServeHTTP(w, r)
}
