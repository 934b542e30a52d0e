#!/usr/bin/env bash
# Releases every module of the repository at one version, or checks that
# the modules are in step.
#
#   scripts/release.sh [-n|--dry-run] [--no-tag] VERSION
#   scripts/release.sh --check
#
# For VERSION (vX.Y.Z, or vX.Y.Z-rc.N, -alpha.N, -beta.N) it
#   1. sets every nested module's requirement on the other modules of the
#      repository to VERSION, with a replace line to the module's directory
#      kept beside it, so that development inside the repository builds
#      against the working tree while a user, for whom replace lines do not
#      count, gets VERSION (CONTRIBUTING.md);
#   2. checks that `go mod tidy` (GOWORK=off) leaves every go.mod and go.sum
#      unchanged, and that the modules build and vet;
#   3. gives CHANGELOG.md's Unreleased section the heading
#      "## [X.Y.Z] - DATE", under a new empty Unreleased section;
#   4. runs the consumer test (internal/consumertest) at VERSION: the
#      modules, got through a file module proxy by a module outside the
#      repository, build and run the README's quick starts;
#   5. commits "release VERSION" and creates the annotated tags Go expects
#      for a multi-module repository: VERSION for the root module and
#      DIR/VERSION for the module in each directory DIR (prometheus/VERSION,
#      benchmarks/VERSION, ...).
# It never pushes; it prints the command that would.
#
# --dry-run does 1 to 4 on the files, shows the differences and the tags it
# would create, then puts every file back: it changes nothing, commits and
# tags nothing. --no-tag does everything but create the tags (and prints
# the commands that would). --check fails unless every nested module
# requires the others at one released version with a replace line beside
# it (make test runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export GOWORK=off GOFLAGS=-mod=mod

dry=0 tag=1 check=0 version=""
for arg in "$@"; do
  case "$arg" in
    -n|--dry-run) dry=1 ;;
    --no-tag) tag=0 ;;
    --check) check=1 ;;
    -*) echo "release: unknown flag $arg" >&2; exit 2 ;;
    *) version=$arg ;;
  esac
done

# A release version: vX.Y.Z, or vX.Y.Z-rc.N (alpha, beta); never a
# pseudo-version such as v0.0.0-00010101000000-000000000000.
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-(rc|alpha|beta)\.[0-9]+)?$'

# The modules: directory (. for the root) and path, from every go.mod Git
# knows of.
dirs=() paths=()
while IFS= read -r f; do
  d=$(dirname "$f")
  dirs+=("$d")
  paths+=("$(awk '$1 == "module" { print $2; exit }' "$f")")
done < <(git ls-files --cached --others --exclude-standard -- 'go.mod' '*/go.mod' | sort)

dir_of() { # module path -> directory
  local i
  for i in "${!paths[@]}"; do
    if [ "${paths[$i]}" = "$1" ]; then echo "${dirs[$i]}"; return; fi
  done
}

# rel FROM TO: the relative path from directory FROM to directory TO.
rel() { realpath --relative-to="$root/$1" "$root/$2"; }

# requires DIR: the repository's modules that the module in DIR requires.
requires() {
  local d=$1 p
  for p in $(cd "$d" && go mod edit -json | grep -o '"Path": "[^"]*"' | cut -d'"' -f4 | sort -u); do
    if [ -n "$(dir_of "$p")" ] && [ "$(dir_of "$p")" != "$d" ]; then echo "$p"; fi
  done
}

if [ "$check" = 1 ]; then
  status=0 seen=""
  for i in "${!dirs[@]}"; do
    d=${dirs[$i]}
    [ "$d" = . ] && continue
    for p in $(requires "$d"); do
      v=$(cd "$d" && go list -m -f '{{.Version}}' "$p")
      r=$(cd "$d" && go mod edit -json | tr -d '\n\t ' | grep -o "\"Old\":{\"Path\":\"$p\"},\"New\":{\"Path\":\"[^\"]*\"" | sed 's/.*"New":{"Path":"//; s/"$//' || true)
      if ! [[ "$v" =~ $semver ]]; then
        echo "$d/go.mod: requires $p at $v, not a released version: run scripts/release.sh VERSION" >&2; status=1
      fi
      if [ -n "$seen" ] && [ "$v" != "$seen" ]; then
        echo "$d/go.mod: requires $p at $v, another module at $seen: run scripts/release.sh VERSION" >&2; status=1
      fi
      seen=$v
      if [ "$r" != "$(rel "$d" "$(dir_of "$p")")" ] && [ "$r" != "./$(rel "$d" "$(dir_of "$p")")" ] && [ "$r" != "$(rel "$d" "$(dir_of "$p")")/" ]; then
        echo "$d/go.mod: no replace $p => $(rel "$d" "$(dir_of "$p")") (found: '${r}')" >&2; status=1
      fi
    done
  done
  [ "$status" = 0 ] && echo "release: every module requires the others at ${seen:-(none)}, with replace lines beside"
  exit $status
fi

if ! [[ "$version" =~ $semver ]]; then
  echo "usage: scripts/release.sh [-n|--dry-run] [--no-tag] VERSION   (VERSION: vX.Y.Z or vX.Y.Z-rc.N)" >&2
  exit 2
fi
tags=()
for d in "${dirs[@]}"; do
  if [ "$d" = . ]; then tags+=("$version"); else tags+=("$d/$version"); fi
done
if [ "$dry" = 0 ]; then
  if [ -n "$(git status --porcelain)" ]; then
    echo "release: the working tree has changes; commit or stash them first" >&2
    exit 1
  fi
  for t in "${tags[@]}"; do
    if git rev-parse -q --verify "refs/tags/$t" >/dev/null; then
      echo "release: tag $t exists" >&2
      exit 1
    fi
  done
fi

# Every file the release may change, saved so that a dry run (or a
# failure) puts it back.
backup=$(mktemp -d)
files=(CHANGELOG.md)
for d in "${dirs[@]}"; do
  files+=("$d/go.mod")
  [ -f "$d/go.sum" ] && files+=("$d/go.sum")
done
for f in "${files[@]}"; do mkdir -p "$backup/$(dirname "$f")"; cp "$f" "$backup/$f"; done
restore() { for f in "${files[@]}"; do cp "$backup/$f" "$f"; done; }
done_ok=0
cleanup() {
  if [ "$dry" = 1 ] || [ "$done_ok" = 0 ]; then restore; fi
  rm -rf "$backup"
}
trap cleanup EXIT

# 1. Requirements and replace lines.
for d in "${dirs[@]}"; do
  [ "$d" = . ] && continue
  for p in $(requires "$d"); do
    (cd "$d" && go mod edit -require="$p@$version" -replace="$p=$(rel "$d" "$(dir_of "$p")")")
    echo "release: $d/go.mod requires $p $version (replace => $(rel "$d" "$(dir_of "$p")"))"
  done
done

# 2. go mod tidy changes nothing; every module builds and vets.
snap=$(mktemp -d)
for f in "${files[@]}"; do mkdir -p "$snap/$(dirname "$f")"; cp "$f" "$snap/$f"; done
for d in "${dirs[@]}"; do
  (cd "$d" && go mod tidy && go build ./... && go vet ./...)
done
untidy=0
for f in "${files[@]}"; do
  if ! cmp -s "$snap/$f" "$f"; then
    echo "release: go mod tidy changed $f:" >&2
    diff -u "$snap/$f" "$f" >&2 || true
    untidy=1
  fi
done
rm -rf "$snap"
if [ "$untidy" = 1 ]; then
  echo "release: run go mod tidy in each module, commit, and release again" >&2
  exit 1
fi
echo "release: go mod tidy leaves every go.mod and go.sum unchanged"

# 3. CHANGELOG.md.
# Keep a Changelog's headings name the version without its "v".
heading=${version#v}
if grep -qF "## [$heading]" CHANGELOG.md; then
  echo "release: CHANGELOG.md already has a section [$heading]"
else
  grep -q '^## \[Unreleased\]$' CHANGELOG.md || { echo "release: CHANGELOG.md has no '## [Unreleased]' heading" >&2; exit 1; }
  today=$(date -u +%Y-%m-%d)
  sed -i "0,/^## \[Unreleased\]\$/s//## [Unreleased]\n\n## [$heading] - $today/" CHANGELOG.md
  echo "release: CHANGELOG.md: ## [$heading] - $today"
fi

# 4. The consumer test at VERSION.
(cd internal/consumertest && go test -count=1 -timeout 90m -v -run TestQuickStarts .)

git --no-pager diff --stat
if [ "$dry" = 1 ]; then
  echo "release: dry run: would commit \"release $version\" and tag ${tags[*]}; putting every file back"
  exit 0
fi

# 5. Commit and tag; never push.
git add -- "${files[@]}"
if git diff --cached --quiet; then
  echo "release: the modules were already at $version; nothing to commit"
else
  git commit -q -m "release $version"
fi
done_ok=1
if [ "$tag" = 1 ]; then
  for t in "${tags[@]}"; do git tag -a "$t" -m "ratescope $t"; done
  echo "release: tagged ${tags[*]}; to publish: git push origin ${tags[*]}"
else
  echo "release: committed, not tagged; to tag: for t in ${tags[*]}; do git tag -a \$t -m \"ratescope \$t\"; done"
fi
