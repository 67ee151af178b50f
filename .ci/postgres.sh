#!/usr/bin/env bash
# .ci/postgres.sh -- start a throwaway PostgreSQL server for the test suite.
#
# Usage:
#     source .ci/postgres.sh         # starts it and exports CLTUNE_TEST_PG_URL
#     eval "$(bash .ci/postgres.sh)" # same, from a subshell: stdout is one line
#                                    #   export CLTUNE_TEST_PG_URL='postgresql+psycopg://...'
#     bash .ci/postgres.sh stop      # stop it and delete its data directory
#
# PostgreSQL refuses to run as root, so the cluster lives in a temporary data
# directory owned by the `postgres` system user (created by Debian's
# `postgresql` package) and the server is run through `runuser -u postgres`.
# Nothing of Debian's own cluster (15/main on port 5432) is touched.
#
#   listens on   127.0.0.1:$CLTUNE_PG_PORT (default 54329), Unix socket in the data dir
#   data dir     $CLTUNE_PG_DIR (default /tmp/cltune-pg-$CLTUNE_PG_PORT)
#   role         cltune / password cltune (scram-sha-256 over TCP)
#   database     cltune_test, owned by that role
#   URL          postgresql+psycopg://cltune:cltune@127.0.0.1:54329/cltune_test
#
# Idempotent: when a server started by this script is already running in that
# directory it is reused (role and database are re-checked). fsync is off: the
# data is throwaway. Progress goes to stderr.

_cltune_pg() {
    local port="${CLTUNE_PG_PORT:-54329}"
    local dir="${CLTUNE_PG_DIR:-/tmp/cltune-pg-$port}"
    local user="${CLTUNE_PG_USER:-cltune}" pass="${CLTUNE_PG_PASSWORD:-cltune}"
    local db="${CLTUNE_PG_DB:-cltune_test}"
    local data="$dir/data" log="$dir/server.log"
    local bindir
    bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    if [[ -z "$bindir" || ! -x "$bindir/initdb" ]]; then
        echo "postgres.sh: no /usr/lib/postgresql/*/bin/initdb (apt-get install postgresql)" >&2
        return 1
    fi
    if ! id postgres >/dev/null 2>&1; then
        echo "postgres.sh: no 'postgres' system user" >&2
        return 1
    fi
    # run the server tools as `postgres` (when we are root), from /, and without
    # LD_LIBRARY_PATH (opencl-env.sh puts the Intel runtime's libraries there)
    local is_root=0 as_pg=(env -C / -u LD_LIBRARY_PATH)
    if [[ "$(id -u)" == 0 ]]; then
        is_root=1
        as_pg=(runuser -u postgres -- "${as_pg[@]}")
    fi

    if [[ "${1:-start}" == stop ]]; then
        if [[ -f "$data/postmaster.pid" ]]; then
            "${as_pg[@]}" "$bindir/pg_ctl" -D "$data" -m fast -w stop >&2 || true
        fi
        rm -rf "$dir"
        return 0
    fi

    if [[ -f "$data/PG_VERSION" ]] && "${as_pg[@]}" "$bindir/pg_ctl" -D "$data" status >/dev/null 2>&1; then
        echo "postgres.sh: reusing the server running in $data" >&2
    else
        rm -rf "$dir"
        mkdir -p "$dir"
        [[ $is_root == 0 ]] || chown postgres:postgres "$dir"
        chmod 700 "$dir"
        if "${as_pg[@]}" bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; then
            echo "postgres.sh: port $port is already taken by another program; set CLTUNE_PG_PORT" >&2
            return 1
        fi
        "${as_pg[@]}" "$bindir/initdb" -D "$data" -U postgres --auth-local=trust \
            --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
            || { cat "$dir/initdb.log" >&2; return 1; }
        "${as_pg[@]}" "$bindir/pg_ctl" -D "$data" -l "$log" -w -t 60 \
            -o "-p $port -c listen_addresses=127.0.0.1 -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
            start >&2 || { cat "$log" >&2; return 1; }
    fi

    local psql=("${as_pg[@]}" "$bindir/psql" -h "$dir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -qAtX)
    if [[ "$("${psql[@]}" -c "SELECT 1 FROM pg_roles WHERE rolname = '$user'")" != 1 ]]; then
        "${psql[@]}" -c "CREATE ROLE \"$user\" LOGIN PASSWORD '$pass'" >&2
    else
        "${psql[@]}" -c "ALTER ROLE \"$user\" LOGIN PASSWORD '$pass'" >&2
    fi
    if [[ "$("${psql[@]}" -c "SELECT 1 FROM pg_database WHERE datname = '$db'")" != 1 ]]; then
        "${psql[@]}" -c "CREATE DATABASE \"$db\" OWNER \"$user\"" >&2
    fi
    # check the password login the tests will use, over TCP
    PGPASSWORD="$pass" "$bindir/psql" -h 127.0.0.1 -p "$port" -U "$user" -d "$db" -qAtX \
        -c "SELECT 1" >/dev/null || { echo "postgres.sh: password login over TCP failed" >&2; return 1; }

    export CLTUNE_TEST_PG_URL="postgresql+psycopg://$user:$pass@127.0.0.1:$port/$db"
    echo "postgres.sh: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') up, CLTUNE_TEST_PG_URL=$CLTUNE_TEST_PG_URL" >&2
    printf "export CLTUNE_TEST_PG_URL='%s'\n" "$CLTUNE_TEST_PG_URL"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    set -euo pipefail
    _cltune_pg "$@"
else
    _cltune_pg "$@" >/dev/null
    _cltune_pg_rc=$?
    unset -f _cltune_pg
    return "$_cltune_pg_rc"
fi
