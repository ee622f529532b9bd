#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests, run as an unprivileged user on a free port.
#
#   source .ci/postgres.sh   # installs PostgreSQL if missing, starts a cluster, exports
#                            # MODELSYNC_POSTGRES_URL and MODELSYNC_POSTGRES_SOCKET_DIR, and
#                            # stops the cluster when the shell exits
#
# Run as root (CI), the cluster belongs to the `postgres` user; run as anyone else, to them.
set -euo pipefail

modelsync_pg_bin() {
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1
}

if [ -z "$(modelsync_pg_bin)" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "postgres.sh: PostgreSQL is not installed; run as root to install it (apt-get install postgresql)" >&2
        return 1 2>/dev/null || exit 1
    fi
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
MODELSYNC_PG_BIN="$(modelsync_pg_bin)"
MODELSYNC_PG_DIR="$(mktemp -d /tmp/modelsync-pg.XXXXXX)"
MODELSYNC_PG_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

modelsync_pg_as_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if [ "$(id -u)" -eq 0 ]; then chown postgres "$MODELSYNC_PG_DIR"; fi
modelsync_pg_as_owner "$MODELSYNC_PG_BIN/initdb" -D "$MODELSYNC_PG_DIR/data" -A trust -U postgres -E UTF8 --locale=C.UTF-8 >/dev/null
# fsync off: the cluster lives for one run and is thrown away. max_connections: the server suites
# run many servers at once, each with a pool of up to 16 connections; a cluster that refuses
# connections ("too many clients") left postgres-nio's pools without connections and requests
# waiting for one forever.
modelsync_pg_as_owner "$MODELSYNC_PG_BIN/pg_ctl" -D "$MODELSYNC_PG_DIR/data" -l "$MODELSYNC_PG_DIR/server.log" -w \
    -o "-p $MODELSYNC_PG_PORT -k $MODELSYNC_PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=1000" start >/dev/null

modelsync_pg_stop() {
    modelsync_pg_as_owner "$MODELSYNC_PG_BIN/pg_ctl" -D "$MODELSYNC_PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$MODELSYNC_PG_DIR"
}
trap modelsync_pg_stop EXIT

export MODELSYNC_POSTGRES_URL="postgres://postgres@127.0.0.1:$MODELSYNC_PG_PORT/postgres"
# The same server through its Unix-domain socket (`?host=<this directory>`).
export MODELSYNC_POSTGRES_SOCKET_DIR="$MODELSYNC_PG_DIR"
echo "PostgreSQL $("$MODELSYNC_PG_BIN/postgres" --version | awk '{print $3}') for the tests at $MODELSYNC_POSTGRES_URL"
