#!/usr/bin/env bash
# browser-ensure.sh — print the path of a Chromium binary for the browser tests.
#
# In order:
#   1. CHROMIUM_PATH, when set and executable, is printed unchanged;
#   2. the first of chromium, chromium-browser, google-chrome on PATH;
#   3. Debian's `chromium` package is installed when we may (root or
#      passwordless sudo), and /usr/bin/chromium is printed;
#   4. otherwise exit 1 with a message.
# Progress goes to stderr; stdout carries only the path. Nothing is printed to
# stderr when a browser is already there.
#
# internal/browser finds the browser the same way (CHROMIUM_PATH, then PATH) but
# never installs it; its tests skip when this script has not been run.
set -euo pipefail

log() { echo "browser-ensure: $*" >&2; }

if [ -n "${CHROMIUM_PATH:-}" ]; then
  if [ -f "$CHROMIUM_PATH" ] && [ -x "$CHROMIUM_PATH" ]; then
    echo "$CHROMIUM_PATH"
    exit 0
  fi
  log "CHROMIUM_PATH=$CHROMIUM_PATH is not an executable file; looking on PATH"
fi

for name in chromium chromium-browser google-chrome; do
  if path="$(command -v "$name" 2>/dev/null)" && [ -n "$path" ]; then
    echo "$path"
    exit 0
  fi
done

if [ "$(id -u)" = 0 ]; then sudo=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo"
else
  log "no Chromium found: install Debian's chromium package (apt-get install chromium)"
  log "or set CHROMIUM_PATH to a Chromium or Chrome binary"
  exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
  log "no Chromium found and no apt-get to install it: set CHROMIUM_PATH"
  exit 1
fi

log "installing Debian's chromium package"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2

if [ ! -x /usr/bin/chromium ]; then
  log "the chromium package is installed but /usr/bin/chromium is missing"
  exit 1
fi
log "installed $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
echo /usr/bin/chromium
