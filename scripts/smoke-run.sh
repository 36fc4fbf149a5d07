#!/usr/bin/env bash
# smoke-run.sh — start `make run` and wait until GET /readyz answers 200.
# Prints the seconds it took; fails after 60 s. The service is stopped
# afterwards. HTTP_ADDR may be set to use another port than 8080.
set -euo pipefail
cd "$(dirname "$0")/.."
addr="${HTTP_ADDR:-127.0.0.1:8080}"
log="$(mktemp)"
start=$(date +%s)
HTTP_ADDR="$addr" make run >"$log" 2>&1 &
pid=$!
trap 'kill -INT $pid 2>/dev/null; pkill -INT -P $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
while :; do
  if curl -fsS "http://$addr/readyz" >/dev/null 2>&1; then
    echo "smoke-run: /readyz answered 200 after $(( $(date +%s) - start ))s"
    exit 0
  fi
  if (( $(date +%s) - start > 60 )); then
    echo "smoke-run: no 200 from /readyz within 60s; log:" >&2
    cat "$log" >&2
    exit 1
  fi
  if ! kill -0 $pid 2>/dev/null; then
    echo "smoke-run: make run exited; log:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 1
done
