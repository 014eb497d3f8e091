# Sourced by the AMQP bench scripts: a private epmd for the private broker.
# rabbitmq-server starts `epmd -daemon' when none answers on the port, and
# that daemon outlives the broker; stopping "the" epmd afterwards could
# stop one that other jobs (test suites, other engineers' brokers) use.
# So the bench runs its own epmd, in the foreground as its child, on a
# port of its own (ERL_EPMD_PORT, which the broker, its CLI and any VM
# the bench starts read), and stops exactly that process at the end.

# private_epmd PORT: starts epmd on 127.0.0.1:PORT and exports ERL_EPMD_PORT.
private_epmd() {
    export ERL_EPMD_PORT=$1
    epmd -port "$1" -address 127.0.0.1 >/dev/null 2>&1 &
    EPMD_PID=$!
    local i
    for i in $(seq 1 50); do
        epmd -port "$1" -names >/dev/null 2>&1 && return 0
        kill -0 "$EPMD_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "amqp-epmd.sh: could not start epmd on 127.0.0.1:$1 (port taken?)" >&2
    exit 1
}

# stop_private_epmd: stops the epmd private_epmd started (that pid only).
stop_private_epmd() {
    if [ -n "${EPMD_PID:-}" ]; then
        kill "$EPMD_PID" 2>/dev/null || true
        wait "$EPMD_PID" 2>/dev/null || true
        EPMD_PID=""
    fi
}

# private_broker: the caller's private broker (scripts/rabbitmq.sh, on
# PORT, with the caller's ROOT and environment) on a private epmd (port
# PORT + 30000), and an EXIT trap that stops both.
private_broker() {
    private_epmd $((PORT + 30000))
    trap 'stop_private_epmd' EXIT
    "$ROOT/scripts/rabbitmq.sh" start >&2
    trap '"$ROOT/scripts/rabbitmq.sh" stop >&2; stop_private_epmd' EXIT
}
