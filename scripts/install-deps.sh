#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian machine, each only when it
# is missing:
#   - a real redis-server and redis-cli (the Redis tests start their own
#     servers and a 3-master cluster on loopback ports, and stop them
#     afterwards);
#   - Debian's chromium (the browser tests of browsertest/ drive it
#     headless through the DevTools protocol);
#   - Debian's prometheus (browsertest's TestDashboardScreenshot runs the
#     Grafana dashboard's queries in a Prometheus that scrapes both
#     metrics modules).
set -euo pipefail

packages=()
if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
  packages+=(redis-server redis-tools)
fi
if ! command -v chromium >/dev/null 2>&1; then
  packages+=(chromium)
fi
if ! command -v prometheus >/dev/null 2>&1; then
  packages+=(prometheus)
fi
if [ "${#packages[@]}" -eq 0 ]; then
  exit 0
fi
echo "installing ${packages[*]} from Debian's packages" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
command -v redis-server >/dev/null
command -v chromium >/dev/null
command -v prometheus >/dev/null
