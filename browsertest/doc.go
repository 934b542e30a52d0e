// Package browsertest holds the tests that drive pages of ratescope in a
// real headless Chromium: the example portal's search boxes and live view,
// and the HTML report of ratescope replay. It also holds the tests of the
// Grafana dashboard of the docs (docs/grafana), which import both metrics
// modules: that they give the same metrics, that the dashboard asks only
// for those, and the picture of its queries run in Prometheus. It is a
// module of its own so that the browser driver, and the two metrics
// modules side by side, never enter the library's go.mod; it has no API.
//
// The tests need Debian's chromium and prometheus (scripts/install-deps.sh
// installs them; make test runs that first). They fail, never skip, when
// one is missing.
package browsertest
