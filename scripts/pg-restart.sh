#!/usr/bin/env bash
# pg-restart.sh --datadir DIR [--down SECONDS] [--log FILE]
#
# Restart the PostgreSQL cluster whose data directory is DIR, in fast mode
# (open sessions are disconnected, running transactions roll back), with
# the options it was started with (postmaster.opts: port, socket directory,
# settings). pg_ctl runs as the owner of DIR: through runuser when we are
# root, else as ourselves.
#
#   --down SECONDS  stop, keep the server down that long, then start it
#                   again (a longer outage than a plain restart)
#   --log FILE      server log while it runs (default DIR/pg-restart.log)
#
# It waits until the server accepts connections again and prints one line:
# "pg-restart: DIR back after N.N s". Exit 2 on a usage error.
set -euo pipefail

usage() { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; }
die() { echo "pg-restart: $1" >&2; exit "${2:-1}"; }

datadir="" down=0 log=""
while [ $# -gt 0 ]; do
  case "$1" in
    --datadir) [ $# -ge 2 ] || die "--datadir needs a directory" 2; datadir="$2"; shift 2 ;;
    --datadir=*) datadir="${1#*=}"; shift ;;
    --down) [ $# -ge 2 ] || die "--down needs a number of seconds" 2; down="$2"; shift 2 ;;
    --down=*) down="${1#*=}"; shift ;;
    --log) [ $# -ge 2 ] || die "--log needs a file" 2; log="$2"; shift 2 ;;
    --log=*) log="${1#*=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument $1 (see --help)" 2 ;;
  esac
done
[ -n "$datadir" ] || die "--datadir DIR is required (see --help)" 2
[[ "$down" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--down must be a number of seconds, got '$down'" 2
datadir="$(readlink -f "$datadir")"
[ -f "$datadir/PG_VERSION" ] || die "$datadir is not a PostgreSQL data directory (no PG_VERSION)" 2
[ -f "$datadir/postmaster.opts" ] || die "$datadir has never been started (no postmaster.opts)"

ver="$(cat "$datadir/PG_VERSION")"
bin="/usr/lib/postgresql/$ver/bin"
[ -x "$bin/pg_ctl" ] || bin="$(dirname "$(command -v pg_ctl 2>/dev/null || echo /nonexistent/pg_ctl)")"
[ -x "$bin/pg_ctl" ] || die "no pg_ctl for PostgreSQL $ver"

owner="$(stat -c %U "$datadir")"
runas=()
if [ "$(id -un)" != "$owner" ]; then
  if [ "$(id -u)" = 0 ]; then runas=(runuser -u "$owner" --)
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then runas=(sudo -n -u "$owner" --)
  else die "$datadir belongs to $owner; run as $owner or root"
  fi
fi
[ -n "$log" ] || log="$datadir/pg-restart.log"

pg_ctl() { (cd / && "${runas[@]}" "$bin/pg_ctl" -D "$datadir" "$@"); }

start=$(date +%s.%N)
if [ "$down" = 0 ]; then
  pg_ctl -l "$log" -m fast -w -t 60 restart >&2
else
  # pg_ctl start alone would not know the port and settings: reuse the
  # command line the server was started with (minus the binary).
  opts="$(sed -e 's/^[^ ]* //' "$datadir/postmaster.opts")"
  pg_ctl -m fast -w -t 60 stop >&2
  sleep "$down"
  pg_ctl -l "$log" -w -t 60 start -o "$opts" >&2
fi
end=$(date +%s.%N)
awk -v d="$datadir" -v a="$start" -v b="$end" 'BEGIN { printf "pg-restart: %s back after %.1f s\n", d, b - a }'
