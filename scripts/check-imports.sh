#!/usr/bin/env bash
# Checks the layout rules the tests cannot see: core imports no web
# framework, and no package imports both Gin and Echo.
set -euo pipefail
status=0
if go list -deps ./core/... | grep -E '^github.com/(gin-gonic/gin|labstack/echo)' >/dev/null; then
  echo "core imports a web framework:" >&2
  go list -deps ./core/... | grep -E '^github.com/(gin-gonic/gin|labstack/echo)' >&2
  status=1
fi
for pkg in $(go list ./...); do
  deps=$(go list -deps "$pkg")
  if grep -q '^github.com/gin-gonic/gin$' <<<"$deps" && grep -q '^github.com/labstack/echo/v4$' <<<"$deps"; then
    case "$pkg" in
      */examples/portal) ;; # the example runs either framework by flag
      *) echo "$pkg imports both Gin and Echo" >&2; status=1 ;;
    esac
  fi
done
exit $status
