# Sourced by the shell suites (cli/groups.sh, connect/run.sh): stop_pid PID SECONDS stops a
# process they started: SIGTERM, then SIGKILL if it is still there after SECONDS; reaps it.
stop_pid() { # pid, seconds to wait after SIGTERM
    local p="$1" waited=0
    [ -n "$p" ] && kill -0 "$p" 2>/dev/null || return 0
    kill -TERM "$p" 2>/dev/null
    while kill -0 "$p" 2>/dev/null && [ "$waited" -lt $(($2 * 10)) ]; do
        sleep 0.1
        waited=$((waited + 1))
    done
    if kill -0 "$p" 2>/dev/null; then
        echo "note: pid $p ignored SIGTERM for $2 s; sending SIGKILL" >&2
        kill -KILL "$p" 2>/dev/null
    fi
    wait "$p" 2>/dev/null
}
