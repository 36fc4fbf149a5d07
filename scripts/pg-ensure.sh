#!/usr/bin/env bash
# pg-ensure.sh DBNAME — print a DATABASE_URL for a PostgreSQL that answers.
#
# In order:
#   1. DATABASE_URL, when set, is printed unchanged;
#   2. a server already listening on 127.0.0.1:5432 (trust auth, user postgres);
#   3. a private cluster under ./var/pg (port 54329, started if stopped, created
#      if missing) from the machine's PostgreSQL binaries, run as the
#      `postgres` user when we are root; Debian's `postgresql` package is
#      installed first when no binaries exist and we may (root or sudo).
# Progress goes to stderr; stdout carries only the URL.
set -euo pipefail

dbname="${1:-followfeed}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
port="${FOLLOWFEED_PG_PORT:-54329}"
log() { echo "pg-ensure: $*" >&2; }

if [ -n "${DATABASE_URL:-}" ]; then
  echo "$DATABASE_URL"
  exit 0
fi

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if port_open 5432; then
  log "using the PostgreSQL listening on 127.0.0.1:5432"
  echo "postgres://postgres@127.0.0.1:5432/${dbname}?sslmode=disable"
  exit 0
fi

if port_open "$port" && [ -f "$root/var/pg/data/PG_VERSION" -o -L "$root/var/pg/data" ]; then
  log "using the private cluster on 127.0.0.1:$port"
  echo "postgres://postgres@127.0.0.1:${port}/${dbname}?sslmode=disable"
  exit 0
fi

find_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
bin="$(find_bin)"
if [ -z "$bin" ]; then
  if [ "$(id -u)" = 0 ]; then sudo=""
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo"
  else
    log "no PostgreSQL found: install Debian's postgresql package or set DATABASE_URL"; exit 1
  fi
  log "installing Debian's postgresql package"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
  bin="$(find_bin)"
  [ -n "$bin" ] || { log "postgresql installed but no binaries under /usr/lib/postgresql"; exit 1; }
  if port_open 5432; then
    log "the package started a server on 127.0.0.1:5432; using it"
    echo "postgres://postgres@127.0.0.1:5432/${dbname}?sslmode=disable"
    exit 0
  fi
fi

# Where the cluster lives. It must be reachable by the user that runs it; a
# checkout under a private home directory is not, so the data then lives in
# /var/tmp with ./var/pg/data a symlink to it.
base="$root/var/pg"
mkdir -p "$base"
runas=()
owner="$(id -un)"
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
  owner=postgres
  runas=(runuser -u postgres --)
fi
data="$base/data"
if [ ! -e "$data" ]; then
  if [ "$owner" != "$(id -un)" ] && ! "${runas[@]}" test -x "$base" 2>/dev/null; then
    chmod o+x "$root/var" "$base" 2>/dev/null || true
  fi
  if [ "$owner" != "$(id -un)" ] && ! "${runas[@]}" test -x "$base" 2>/dev/null; then
    alt="/var/tmp/followfeed-pg-$(echo "$root" | md5sum | cut -c1-12)"
    log "$base is not reachable by $owner; keeping the cluster in $alt"
    mkdir -p "$alt"; chown "$owner" "$alt"; chmod 700 "$alt"
    ln -s "$alt/data" "$data"
    data_real="$alt/data"
  else
    data_real="$data"
  fi
  mkdir -p "$data_real"; chown "$owner" "$data_real"; chmod 700 "$data_real"
  log "creating a private cluster in $data_real"
  "${runas[@]}" "$bin/initdb" -D "$data_real" -U postgres --auth=trust --encoding=UTF8 --no-locale >"$base/initdb.log" 2>&1 \
    || { cat "$base/initdb.log" >&2; exit 1; }
fi
data_real="$(readlink -f "$data")"
run="$data_real/../run"
mkdir -p "$run"; chown "$owner" "$run"
touch "$base/server.log"; chown "$owner" "$base/server.log"
if ! "${runas[@]}" "$bin/pg_ctl" -D "$data_real" status >/dev/null 2>&1; then
  log "starting the private cluster on 127.0.0.1:$port"
  "${runas[@]}" "$bin/pg_ctl" -D "$data_real" -l "$base/server.log" -w -t 60 start \
    -o "-p $port -k $(readlink -f "$run") -c listen_addresses=127.0.0.1 -c max_connections=200 -c shared_buffers=256MB" >&2 \
    || { tail -n 20 "$base/server.log" >&2; exit 1; }
fi
echo "postgres://postgres@127.0.0.1:${port}/${dbname}?sslmode=disable"
