#!/usr/bin/env bash
# Measures what a Gin-only, an Echo v4 and an Echo v5 user download under
# three packagings of the Echo v5 middleware (ADR 0016):
#   root    echo5limit is a package of the root module (the choice);
#   nested  echo5limit is a module of its own, the root knows nothing of
#           Echo v5 (the example portal could not run on Echo v5);
#   cycle   as nested, and the root requires the echo5limit module so that
#           the example portal can (a module cycle).
# Each user is a fresh module outside the repository, with a module cache
# of its own, that gets ratescope at v0.1.0 from a file module proxy
# written from HEAD (third-party modules from this machine's module cache,
# else its GOPROXY), runs go mod tidy and go list -deps (what go build
# downloads, without compiling), and reports
# `go mod graph | wc -l`, the bytes of its module cache (du -sb, without
# the checksum database's tiles), the number of module zips, and
# which Echo modules it has the source of (a zip extracted) or only the
# go.mod of.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
(cd internal/consumertest && go build -o "$work/modproxy" ./cmd/modproxy)
shared=$(go env GOMODCACHE)
upstream=$(go env GOPROXY | tr "|" "," | tr "," "\n" | grep -vx "direct\|off" | paste -sd, -)
base=$(git merge-base HEAD main 2>/dev/null || git rev-list --max-parents=0 HEAD)
R=github.com/ratescope/ratescope
V=v0.1.0

tree() { # name: a Git working tree of HEAD's files
  mkdir -p "$work/$1"
  git archive HEAD | tar -x -C "$work/$1"
  (cd "$work/$1" && git init -q && git add -A)
}

# root: as HEAD is.
tree root
sed -i "s#$R v.*#$R $V#" "$work/root/prometheus/go.mod"
"$work/modproxy" -repo "$work/root" -version $V -out "$work/proxy-root" "$R=." "$R/prometheus=prometheus"

# nested: the root's go.mod without Echo v5 (as before it), echo5limit a
# module requiring the root.
tree nested
git show "$base:go.mod" > "$work/nested/go.mod"
cat > "$work/nested/echo5limit/go.mod" <<MOD
module $R/echo5limit

go 1.26.0

require (
	$R $V
	github.com/labstack/echo/v5 v5.4.4
)

replace $R => ../
MOD
(cd "$work/nested/echo5limit" && GOWORK=off GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 && (cd .. && git add -A))
"$work/modproxy" -repo "$work/nested" -version $V -out "$work/proxy-nested" "$R=." "$R/echo5limit=echo5limit"

# cycle: as nested, and the root requires the echo5limit module.
tree cycle
cp "$work/nested/go.mod" "$work/cycle/go.mod"
cp "$work/nested/echo5limit/go.mod" "$work/nested/echo5limit/go.sum" "$work/cycle/echo5limit/"
(cd "$work/cycle" && go mod edit -require=$R/echo5limit@$V && git add -A)
"$work/modproxy" -repo "$work/cycle" -version $V -out "$work/proxy-cycle" "$R=." "$R/echo5limit=echo5limit"

user() { # layout kind
  local layout=$1 kind=$2 dir="$work/user-$1-$2" cache="$work/cache-$1-$2" get=("$R@$V")
  mkdir -p "$dir" "$cache"
  case $kind in
    gin) imp='"github.com/gin-gonic/gin"'; code='r := gin.New(); mw, err := ginlimit.New(ginlimit.Config{Limiter: lim}); if err != nil { panic(err) }; r.Use(mw); _ = r'; pkg=ginlimit ;;
    echo4) imp='"github.com/labstack/echo/v4"'; code='e := echo.New(); mw, err := echolimit.New(echolimit.Config{Limiter: lim}); if err != nil { panic(err) }; e.Use(mw); _ = e'; pkg=echolimit ;;
    echo5) imp='"github.com/labstack/echo/v5"'; code='e := echo.New(); mw, err := echo5limit.New(echo5limit.Config{Limiter: lim}); if err != nil { panic(err) }; e.Use(mw); _ = e'; pkg=echo5limit
           [ "$layout" != root ] && get+=("$R/echo5limit@$V") ;;
  esac
  printf 'module example.com/user\n\ngo 1.26.0\n' > "$dir/go.mod"
  # The checksums the repository's go.sum files hold, so that the checksum
  # database is not asked again over the network (its tiles would count
  # in the cache's bytes, and differ from run to run).
  local sums=("$work/$layout/go.sum")
  [ -f "$work/$layout/echo5limit/go.sum" ] && sums+=("$work/$layout/echo5limit/go.sum")
  sort -u "${sums[@]}" > "$dir/go.sum"
  cat > "$dir/main.go" <<GO
package main

import (
	$imp
	"$R/core"
	"$R/core/memstore"
	"$R/$pkg"
)

func main() {
	lim, err := core.New(core.Config{Store: memstore.New(memstore.Config{}), NumProxies: new(0)})
	if err != nil {
		panic(err)
	}
	$code
}
GO
  local env=(GOWORK=off "GOFLAGS=-mod=mod -modcacherw" GOMODCACHE="$cache" GONOSUMDB=$R GOTOOLCHAIN=local GIT_TERMINAL_PROMPT=0
    GOPROXY="file://$work/proxy-$layout,file://$shared/cache/download,$upstream")
  (cd "$dir" && env "${env[@]}" go get "${get[@]}" && env "${env[@]}" go mod tidy && env "${env[@]}" go list -deps . >/dev/null ) >"$work/$layout-$kind.log" 2>&1 \
    || { echo "$layout $kind: failed:" >&2; cat "$work/$layout-$kind.log" >&2; return 1; }
  local graph bytes zips code4 code5 mod4 mod5
  graph=$(cd "$dir" && env "${env[@]}" go mod graph | wc -l)
  bytes=$(du -sb --exclude=sumdb "$cache" | cut -f1)
  zips=$(find "$cache/cache/download" -name '*.zip' | wc -l)
  code4=$(ls -d "$cache/github.com/labstack/echo/v4@"* >/dev/null 2>&1 && echo src || { ls "$cache/cache/download/github.com/labstack/echo/v4/@v/"*.mod >/dev/null 2>&1 && echo mod || echo -; })
  code5=$(ls -d "$cache/github.com/labstack/echo/v5@"* >/dev/null 2>&1 && echo src || { ls "$cache/cache/download/github.com/labstack/echo/v5/@v/"*.mod >/dev/null 2>&1 && echo mod || echo -; })
  printf '%-7s %-6s graph=%4d cache=%10d B zips=%3d echo/v4=%-3s echo/v5=%-3s x/net=%s\n' "$layout" "$kind" "$graph" "$bytes" "$zips" "$code4" "$code5" \
    "$(cd "$dir" && env "${env[@]}" go list -m -f '{{.Version}}' golang.org/x/net)"
}

for layout in root nested cycle; do
  for kind in gin echo4 echo5; do
    user $layout $kind
  done
done
