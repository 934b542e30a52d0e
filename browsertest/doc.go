// Package browsertest holds the tests that drive pages of ratescope in a
// real headless Chromium: the example portal's search boxes, and the HTML
// report of ratescope replay. It is a module of its own so that the browser
// driver never enters the library's go.mod; it has no API.
//
// The tests need Debian's chromium (scripts/install-deps.sh installs it;
// make test runs that first). They fail, never skip, when it is missing.
package browsertest
