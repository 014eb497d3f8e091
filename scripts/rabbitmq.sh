#!/usr/bin/env bash
# Start, stop or query a private RabbitMQ broker for beamlab's tests and
# benchmarks: Debian's rabbitmq-server run directly (no systemd, no service),
# AMQP on 127.0.0.1 (or BEAMLAB_RABBIT_ADDR), Erlang distribution on 127.0.0.1, all state under
# _build/rabbitmq/<port>. Works as root (CI) and as a normal user.
#
#   scripts/rabbitmq.sh start|stop|status|restart|uri|ctl ARGS...
#
# BEAMLAB_RABBIT_PORT (default 5673) picks the AMQP port; the node name,
# distribution port and state directory derive from it, so several brokers
# (e.g. one per test suite) can run side by side.
# BEAMLAB_RABBIT_ADDR (default 127.0.0.1) is the address AMQP and the
# broker's distribution listen on, e.g. a network namespace's address
# (`ip netns exec NS scripts/rabbitmq.sh start'); on another address than
# loopback the guest user may log in from other hosts (test brokers only).
# BEAMLAB_RABBIT_SESSION=caller starts the broker in the caller's session
# (default: a session of its own), see start() below.
# BEAMLAB_RABBIT_OTP=DIR runs the broker (and its CLI) on the Erlang/OTP
# installed in DIR (its bin first on PATH), e.g. /opt/beamlab-otp/27 from
# scripts/install-otp.sh; the broker is then RabbitMQ 4.0 from
# scripts/install-rabbitmq.sh (/opt/beamlab-rabbitmq/4.0, or
# BEAMLAB_RABBITMQ40_PREFIX), since Debian 12's 3.10 runs on OTP 25 at most.
# BEAMLAB_RABBIT_FLAVOR=jit|emu picks that OTP's emulator flavour (the JIT or
# the interpreter: `-emu_flavor', which erl reads); `start' prints the flavour
# the running broker reports.
# RABBITMQ_SBIN=DIR names another broker's bin directory outright.
# BEAMLAB_RABBIT_TLS_PORT adds a TLS listener on that port, with the
# certificates in BEAMLAB_RABBIT_TLS_DIR (ca.pem, server.pem, server.key:
# PEM, the key unencrypted); clients' certificates are verified when
# given (not required), and SASL EXTERNAL logs in the user named by a
# client certificate's common name (plugin rabbitmq_auth_mechanism_ssl).
set -euo pipefail

PORT=${BEAMLAB_RABBIT_PORT:-5673}
ADDR=${BEAMLAB_RABBIT_ADDR:-127.0.0.1}
case "$ADDR" in
    127.*) GUEST_LOOPBACK=true ;;
    *) GUEST_LOOPBACK=false ;;
esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OTP=${BEAMLAB_RABBIT_OTP:-}
FLAVOR=${BEAMLAB_RABBIT_FLAVOR:-}
if [ -n "$OTP" ]; then
    if [ ! -x "$OTP/bin/erl" ]; then
        echo "rabbitmq.sh: BEAMLAB_RABBIT_OTP=$OTP: no bin/erl there (build one with scripts/install-otp.sh)" >&2
        exit 1
    fi
    PATH="$OTP/bin:$PATH"
    export PATH
    SBIN=${RABBITMQ_SBIN:-${BEAMLAB_RABBITMQ40_PREFIX:-/opt/beamlab-rabbitmq/4.0}/bin}
    HINT="install RabbitMQ 4.0 with scripts/install-rabbitmq.sh"
else
    SBIN=${RABBITMQ_SBIN:-/usr/lib/rabbitmq/bin}
    HINT="install Debian's rabbitmq-server package"
fi
case "$FLAVOR" in
    ""|jit|emu) ;;
    *) echo "rabbitmq.sh: BEAMLAB_RABBIT_FLAVOR=$FLAVOR: expected jit or emu" >&2; exit 2 ;;
esac
if [ ! -x "$SBIN/rabbitmq-server" ]; then
    echo "rabbitmq.sh: $SBIN/rabbitmq-server not found ($HINT)" >&2
    exit 1
fi
# Each broker release keeps its own state: a 4.0 broker cannot start on the
# data directory a 3.10 one left, nor the other way round.
case "$SBIN" in
    /usr/lib/rabbitmq/bin) DEFAULT_DIR=$ROOT/_build/rabbitmq/$PORT ;;
    *) DEFAULT_DIR=$ROOT/_build/rabbitmq/$PORT-$(basename "$(dirname "$(dirname "$(readlink -f "$SBIN/rabbitmq-server")")")") ;;
esac
DIR=${BEAMLAB_RABBIT_DIR:-$DEFAULT_DIR}
NODE="beamlab-rabbit-$PORT@localhost"
DIST_PORT=$((PORT + 20000))
PIDFILE="$DIR/rabbit.pid"
TLS_PORT=${BEAMLAB_RABBIT_TLS_PORT:-}
TLS_DIR=${BEAMLAB_RABBIT_TLS_DIR:-}
if [ -n "$TLS_PORT" ]; then
    for f in ca.pem server.pem server.key; do
        if [ ! -r "$TLS_DIR/$f" ]; then
            echo "rabbitmq.sh: BEAMLAB_RABBIT_TLS_PORT needs $f in BEAMLAB_RABBIT_TLS_DIR ('$TLS_DIR')" >&2
            exit 2
        fi
    done
    TLS_DIR=$(cd "$TLS_DIR" && pwd)
fi

# Everything RabbitMQ and its CLI read comes from here, not from /etc or $HOME.
export HOME="$DIR"
export ERL_EPMD_ADDRESS=127.0.0.1
export RABBITMQ_NODENAME="$NODE"
export RABBITMQ_NODE_IP_ADDRESS="$ADDR"
export RABBITMQ_NODE_PORT="$PORT"
export RABBITMQ_DIST_PORT="$DIST_PORT"
export RABBITMQ_CONF_ENV_FILE="$DIR/rabbitmq-env.conf"
export RABBITMQ_CONFIG_FILE="$DIR/rabbitmq.conf"
export RABBITMQ_ADVANCED_CONFIG_FILE="$DIR/advanced.config"
export RABBITMQ_ENABLED_PLUGINS_FILE="$DIR/enabled_plugins"
export RABBITMQ_MNESIA_BASE="$DIR/mnesia"
export RABBITMQ_LOG_BASE="$DIR/log"
export RABBITMQ_PID_FILE="$PIDFILE"
export RABBITMQ_PLUGINS_EXPAND_DIR="$DIR/plugins-expand"
# Erlang distribution (broker and CLI) listens on loopback only, whatever
# BEAMLAB_RABBIT_ADDR says (only AMQP listens there).
export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}${FLAVOR:+ -emu_flavor $FLAVOR}"
export RABBITMQ_CTL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"

# The CLI is an Erlang VM too: when it fails (e.g. no cookie yet because the
# state directory does not exist) it must not leave erl_crash.dump in the
# caller's current directory.
ctl() { ERL_CRASH_DUMP_SECONDS=0 ERL_CRASH_DUMP=/dev/null "$SBIN/rabbitmqctl" -n "$NODE" "$@"; }

amqp_open() {
    # Succeeds when something accepts TCP connections on the AMQP port.
    (exec 3<>"/dev/tcp/$ADDR/$PORT") 2>/dev/null
}

# No state directory: this script never started that broker (and the CLI
# would have no cookie to ask it with).
running() { [ -d "$DIR" ] && ctl -q status >/dev/null 2>&1; }

prepare() {
    mkdir -p "$DIR/mnesia" "$DIR/log"
    : > "$RABBITMQ_CONF_ENV_FILE"
    echo "[]." > "$RABBITMQ_ENABLED_PLUGINS_FILE"
    echo "[]." > "$RABBITMQ_ADVANCED_CONFIG_FILE"
    cat > "$RABBITMQ_CONFIG_FILE" <<CONF
listeners.tcp.1 = $ADDR:$PORT
loopback_users.guest = $GUEST_LOOPBACK
log.console = false
log.file.level = warning
disk_free_limit.absolute = 50MB
CONF
    if [ -n "$TLS_PORT" ]; then
        echo "[rabbitmq_auth_mechanism_ssl]." > "$RABBITMQ_ENABLED_PLUGINS_FILE"
        cat >> "$RABBITMQ_CONFIG_FILE" <<CONF
listeners.ssl.1 = $ADDR:$TLS_PORT
ssl_options.cacertfile = $TLS_DIR/ca.pem
ssl_options.certfile = $TLS_DIR/server.pem
ssl_options.keyfile = $TLS_DIR/server.key
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = false
ssl_cert_login_from = common_name
auth_mechanisms.1 = PLAIN
auth_mechanisms.2 = AMQPLAIN
auth_mechanisms.3 = EXTERNAL
CONF
    fi
    # The Erlang cookie is private to this broker; the CLI finds it via HOME.
    if [ ! -f "$DIR/.erlang.cookie" ]; then
        head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$DIR/.erlang.cookie"
        chmod 400 "$DIR/.erlang.cookie"
    fi
}

start() {
    if running; then
        echo "rabbitmq: already running as $NODE on $ADDR:$PORT"
        return 0
    fi
    if amqp_open; then
        echo "rabbitmq.sh: port $PORT is taken by another program; set BEAMLAB_RABBIT_PORT" >&2
        exit 1
    fi
    prepare
    rm -f "$PIDFILE"
    # setsid: the broker must not die with the shell (or test run) that started it.
    # BEAMLAB_RABBIT_SESSION=caller keeps it in the caller's session, hence in
    # the caller's CPU scheduling group (Linux autogroup): a benchmark whose
    # broker and load generator share the cores then sees the broker get what
    # the generator leaves, as on a machine of their own (bench/amqp_scale.sh).
    if [ "${BEAMLAB_RABBIT_SESSION:-own}" = caller ]; then
        "$SBIN/rabbitmq-server" >"$DIR/log/stdout.log" 2>&1 </dev/null &
    else
        setsid "$SBIN/rabbitmq-server" >"$DIR/log/stdout.log" 2>&1 </dev/null &
    fi
    local deadline=$((SECONDS + ${BEAMLAB_RABBIT_TIMEOUT:-120}))
    until amqp_open && running; do
        if [ $SECONDS -ge $deadline ]; then
            echo "rabbitmq.sh: broker did not start within ${BEAMLAB_RABBIT_TIMEOUT:-120} s; see $DIR/log" >&2
            tail -n 20 "$DIR/log/stdout.log" >&2 || true
            exit 1
        fi
        sleep 0.5
    done
    ctl -q await_startup --timeout 60 >/dev/null
    echo "rabbitmq: running as $NODE on amqp://guest:guest@$ADDR:$PORT/${TLS_PORT:+ and amqps://$ADDR:$TLS_PORT/} (state in $DIR)"
    if [ -n "$OTP$FLAVOR" ]; then
        # What the broker itself reports, not what was asked.
        echo "rabbitmq: OTP $(ctl -q eval 'erlang:system_info(otp_release).' | tr -d '"'), $(ctl -q eval 'erlang:system_info(emu_flavor).') flavour"
    fi
}

stop() {
    local pid=""
    [ -f "$PIDFILE" ] && pid=$(cat "$PIDFILE")
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        # A test may have frozen it (SIGSTOP) and failed before thawing it.
        kill -CONT "$pid" 2>/dev/null || true
    fi
    if running; then
        ctl -q stop >/dev/null 2>&1 || true
    elif [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        # Alive but not answering the CLI (still booting, or wedged).
        kill -TERM "$pid" 2>/dev/null || true
    else
        echo "rabbitmq: not running ($NODE)"
        return 0
    fi
    # rabbitmqctl stop returns when the node is asked to stop; wait for the OS process.
    local deadline=$((SECONDS + 60))
    while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; do
        if [ $SECONDS -ge $deadline ]; then
            kill -KILL "$pid" 2>/dev/null || true
            break
        fi
        sleep 0.2
    done
    echo "rabbitmq: stopped ($NODE)"
}

status() {
    if running; then
        echo "rabbitmq: running as $NODE on amqp://guest:guest@$ADDR:$PORT/"
    else
        echo "rabbitmq: not running ($NODE)"
        return 3
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    restart) stop; start ;;
    status) status ;;
    uri) echo "amqp://guest:guest@$ADDR:$PORT/" ;;
    ctl) shift; ctl "$@" ;;
    *) echo "usage: $0 start|stop|restart|status|uri|ctl ARGS...   (BEAMLAB_RABBIT_PORT=$PORT)" >&2; exit 2 ;;
esac
