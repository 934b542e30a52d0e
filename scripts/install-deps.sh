#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian machine: a real redis-server
# and redis-cli (the Redis tests start their own servers and a 3-master
# cluster on loopback ports, and stop them afterwards).
set -euo pipefail

if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
  exit 0
fi
echo "installing redis-server and redis-tools from Debian's packages" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends redis-server redis-tools >/dev/null
command -v redis-server >/dev/null
