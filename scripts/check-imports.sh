#!/usr/bin/env bash
# Checks the layout rules the tests cannot see: core imports no web
# framework, and no package imports two of Gin, Echo v4 and Echo v5 (a
# user of one never builds another's code).
set -euo pipefail
status=0
frameworks='^github.com/(gin-gonic/gin|labstack/echo/v4|labstack/echo/v5)$'
if go list -deps ./core/... | grep -E '^github.com/(gin-gonic/gin|labstack/echo)' >/dev/null; then
  echo "core imports a web framework:" >&2
  go list -deps ./core/... | grep -E '^github.com/(gin-gonic/gin|labstack/echo)' >&2
  status=1
fi
# The example portal, which runs any of the three by flag, is a module of
# its own (ADR 0017): go list ./... does not list it.
for pkg in $(go list ./...); do
  used=$(go list -deps "$pkg" | grep -E "$frameworks" || true)
  if [ "$(grep -c . <<<"$used")" -gt 1 ]; then
    echo "$pkg imports more than one framework:" $used >&2; status=1
  fi
done
exit $status
