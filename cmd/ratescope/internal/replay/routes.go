package replay

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A Route sends the requests whose path starts with Prefix to a scope.
type Route struct {
	// Prefix is the start of the path, such as "/api/".
	Prefix string
	// Scope is the scope's name; a name ending in ".*" takes the part of
	// the path after Prefix up to the next '/': "autocomplete.*" sends
	// /autocomplete/project?q=a to autocomplete.project, and a request
	// to a name the limiter does not know is not limited. A scope that
	// is not the library's (api, autocomplete.NAME) is one of the
	// application's own, and needs its rates in [Settings].Rates.
	Scope string
	// Cost is what each request costs, 1 or more.
	Cost int64
}

// Routes is a list of routes; the longest matching prefix wins. Its text
// form, for the flag package, is PREFIX=SCOPE[:COST], one a flag.
type Routes []Route

// DefaultRoutes returns the routes of the example portal: /api/ to the
// api scope, /autocomplete/NAME to the scope of that search box.
func DefaultRoutes() Routes {
	return Routes{{Prefix: "/api/", Scope: "api", Cost: 1}, {Prefix: "/autocomplete/", Scope: "autocomplete.*", Cost: 1}}
}

// ParseRoute reads PREFIX=SCOPE[:COST].
func ParseRoute(s string) (Route, error) {
	prefix, rest, ok := strings.Cut(s, "=")
	if !ok || !strings.HasPrefix(prefix, "/") || rest == "" {
		return Route{}, fmt.Errorf("route %q: want PREFIX=SCOPE[:COST], PREFIX starting with /, e.g. /api/=api or /api/export=api:5", s)
	}
	scope, cost, hasCost := strings.Cut(rest, ":")
	r := Route{Prefix: prefix, Scope: scope, Cost: 1}
	if hasCost {
		n, err := strconv.ParseInt(cost, 10, 64)
		if err != nil || n < 1 {
			return Route{}, fmt.Errorf("route %q: cost %q is not a whole number of 1 or more", s, cost)
		}
		r.Cost = n
	}
	name := strings.TrimSuffix(scope, ".*")
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return Route{}, fmt.Errorf("route %q: scope %q: use lower-case letters, digits, '.', '_' and '-'", s, scope)
		}
	}
	if name == "" {
		return Route{}, fmt.Errorf("route %q: no scope", s)
	}
	return r, nil
}

// Set adds a route, for the flag package. The routes given are added to
// [DefaultRoutes]; one with the prefix of a default route replaces it.
func (rs *Routes) Set(s string) error {
	r, err := ParseRoute(s)
	if err != nil {
		return err
	}
	for _, old := range *rs {
		if old.Prefix == r.Prefix {
			return errors.New("route " + s + ": prefix " + r.Prefix + " given twice")
		}
	}
	*rs = append(*rs, r)
	return nil
}

// String returns the routes, space-separated.
func (rs *Routes) String() string {
	if rs == nil {
		return ""
	}
	var parts []string
	for _, r := range *rs {
		parts = append(parts, r.String())
	}
	return strings.Join(parts, " ")
}

// String returns the route as ParseRoute reads it.
func (r Route) String() string {
	s := r.Prefix + "=" + r.Scope
	if r.Cost != 1 {
		s += ":" + strconv.FormatInt(r.Cost, 10)
	}
	return s
}

// RoutesInForce returns the routes a replay decides with: the default
// routes whose prefix no route of s.Routes has, then s.Routes.
func (s Settings) RoutesInForce() Routes {
	var out Routes
	for _, d := range DefaultRoutes() {
		if !slices.ContainsFunc(s.Routes, func(r Route) bool { return r.Prefix == d.Prefix }) {
			out = append(out, d)
		}
	}
	return append(out, s.Routes...)
}

// router finds the scope of a path.
type router struct {
	routes Routes // longest prefix first
	known  func(scope string) bool
	names  []map[string]scopeID // per route: NAME -> its scope, made once
	ids    map[string]int       // scope -> its number, from 0
}

// scopeID is a scope and its number, so that a replay finds its
// statistics by index.
type scopeID struct {
	name string
	id   int // -1: no scope the limiter knows
}

// id returns the number of scope, or -1 if the limiter does not know it.
func (rt *router) id(scope string) scopeID {
	if !rt.known(scope) {
		return scopeID{id: -1}
	}
	n, ok := rt.ids[scope]
	if !ok {
		n = len(rt.ids)
		rt.ids[scope] = n
	}
	return scopeID{name: scope, id: n}
}

func newRouter(rs Routes, known func(string) bool) *router {
	sorted := append(Routes(nil), rs...)
	// Longest prefix first, so that the first match is the longest.
	for i := 1; i < len(sorted); i++ {
		for j := i; j > 0 && len(sorted[j].Prefix) > len(sorted[j-1].Prefix); j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	rt := &router{routes: sorted, known: known, names: make([]map[string]scopeID, len(sorted)), ids: map[string]int{}}
	for i, r := range sorted {
		rt.names[i] = map[string]scopeID{}
		if !strings.HasSuffix(r.Scope, ".*") {
			rt.names[i][""] = rt.id(r.Scope)
		}
	}
	return rt
}

// route returns the scope and cost of path, or ok false when no route
// limits it.
func (rt *router) route(path []byte) (scope scopeID, cost int64, ok bool) {
	for i := range rt.routes {
		r := &rt.routes[i]
		if len(path) < len(r.Prefix) || string(path[:len(r.Prefix)]) != r.Prefix {
			continue
		}
		var name []byte
		if strings.HasSuffix(r.Scope, ".*") {
			name = path[len(r.Prefix):]
			if j := bytes.IndexByte(name, '/'); j >= 0 {
				name = name[:j]
			}
		}
		if s, hit := rt.names[i][string(name)]; hit {
			return s, r.Cost, s.id >= 0
		}
		s := rt.id(r.Scope[:len(r.Scope)-1] + string(name))
		if len(rt.names[i]) < 4096 {
			rt.names[i][string(name)] = s
		}
		return s, r.Cost, s.id >= 0
	}
	return scopeID{id: -1}, 0, false
}
