#!/usr/bin/env bash
# pgbouncer-ensure.sh — print the path of a pgbouncer binary (the soak's
# processes scenario runs a private instance of it).
#
# In order:
#   1. pgbouncer on PATH, or /usr/sbin/pgbouncer;
#   2. Debian's `pgbouncer` package is installed when we may (root or
#      passwordless sudo), and its binary is printed;
#   3. otherwise exit 1 with a message.
# Progress goes to stderr; stdout carries only the path. The package's own
# service (port 6432, /etc/pgbouncer) is left as the package sets it up: the
# soak never uses it, it writes its own configuration under /tmp and listens
# on a free port from 64320 (internal/pgcluster).
set -euo pipefail

log() { echo "pgbouncer-ensure: $*" >&2; }

find_bin() {
  command -v pgbouncer 2>/dev/null && return 0
  [ -x /usr/sbin/pgbouncer ] && { echo /usr/sbin/pgbouncer; return 0; }
  return 1
}

if path="$(find_bin)"; then
  echo "$path"
  exit 0
fi

if [ "$(id -u)" = 0 ]; then sudo=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo"
else
  log "no pgbouncer found: install Debian's pgbouncer package (apt-get install pgbouncer)"
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  log "no pgbouncer found and no apt-get to install it"
  exit 1
fi

log "installing Debian's pgbouncer package"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >&2
path="$(find_bin)" || { log "the pgbouncer package is installed but no pgbouncer binary was found"; exit 1; }
log "installed $("$path" --version 2>/dev/null | head -n 1)"
echo "$path"
