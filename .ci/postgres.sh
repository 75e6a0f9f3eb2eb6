#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests and benchmarks.
#
#   eval "$(.ci/postgres.sh start)"   # installs Debian's postgresql if absent (needs root),
#                                     # starts a cluster in a temp dir, prints the exports
#   make test                         # the PostgreSQL tests use $RUNCONTEXT_TEST_POSTGRES_DSN
#   .ci/postgres.sh stop              # stops it and removes the dir ($RUNCONTEXT_TEST_POSTGRES_DIR)
#
# The server listens only on a Unix socket inside its own temp dir (listen_addresses=''), so
# several clusters on one machine never collide on a port. Authentication is `trust` for the
# superuser `runcontext`; the socket dir is mode 0700 (owned by the server's user), so only that
# user and root can connect. As root (CI), initdb refuses to run: the cluster runs as the
# `postgres` user if it exists, else as a `runcontext-pg` system user created for it.
# Durability settings are off (fsync, synchronous_commit, full_page_writes): the tests kill
# clients, not the server, and a killed client's uncommitted transaction is rolled back either
# way. Set RUNCONTEXT_PG_DURABLE=1 to keep PostgreSQL's defaults (for benchmarks).
set -euo pipefail

find_bindir() {
    local dir
    for dir in /usr/lib/postgresql/*/bin; do
        if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
            echo "$dir"
        fi
    done | sort -V | tail -n 1
}

as_server_user() {
    if [ "$(id -u)" -eq 0 ]; then
        # From /: the server's user may not be able to enter the caller's directory.
        (cd / && runuser -u "$server_user" -- "$@")
    else
        "$@"
    fi
}

start() {
    local bindir
    bindir=$(find_bindir)
    if [ -z "$bindir" ]; then
        if [ "$(id -u)" -ne 0 ]; then
            echo "postgres.sh: no initdb under /usr/lib/postgresql/*/bin; install Debian's" \
                "postgresql package (sudo apt-get install postgresql)" >&2
            exit 1
        fi
        echo "postgres.sh: installing Debian's postgresql package" >&2
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
        bindir=$(find_bindir)
        if [ -z "$bindir" ]; then
            echo "postgres.sh: postgresql installed but no initdb under /usr/lib/postgresql" >&2
            exit 1
        fi
    fi

    server_user=$(id -un)
    if [ "$(id -u)" -eq 0 ]; then
        if id postgres >/dev/null 2>&1; then
            server_user=postgres
        else
            server_user=runcontext-pg
            id "$server_user" >/dev/null 2>&1 || useradd --system --no-create-home \
                --shell /usr/sbin/nologin "$server_user"
        fi
    fi

    local dir
    dir=$(mktemp -d "${TMPDIR:-/tmp}/runcontext-pg.XXXXXX")
    chmod 0700 "$dir"
    [ "$(id -u)" -eq 0 ] && chown "$server_user" "$dir"
    echo "$server_user" >"$dir/server-user"

    as_server_user "$bindir/initdb" -D "$dir/data" -U runcontext --auth=trust -E UTF8 \
        --no-locale --no-sync >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2
        exit 1
    }
    local options="-k $dir -c listen_addresses='' -p 5432 -c max_connections=200"
    if [ -z "${RUNCONTEXT_PG_DURABLE:-}" ]; then
        options="$options -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    fi
    as_server_user "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "$options" start >&2 || {
        cat "$dir/server.log" >&2
        exit 1
    }
    echo "export RUNCONTEXT_TEST_POSTGRES_DSN='postgresql://runcontext@/postgres?host=$dir'"
    echo "export RUNCONTEXT_TEST_POSTGRES_DIR='$dir'"
}

stop() {
    local dir=${1:-${RUNCONTEXT_TEST_POSTGRES_DIR:-}}
    if [ -z "$dir" ] || [ ! -d "$dir/data" ]; then
        echo "postgres.sh stop: no cluster (pass its dir or set RUNCONTEXT_TEST_POSTGRES_DIR)" >&2
        exit 1
    fi
    local bindir
    bindir=$(find_bindir)
    server_user=$(cat "$dir/server-user")
    as_server_user "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
    rm -rf "$dir"
}

case "${1:-}" in
    start) start ;;
    stop) stop "${2:-}" ;;
    *)
        echo "usage: .ci/postgres.sh start | stop [DIR]" >&2
        exit 2
        ;;
esac
