#!/bin/sh
# Installs what beamlab needs on Debian 12 (or says what to install).
#   scripts/install-deps.sh          build and run: Erlang/OTP and rebar3
#   scripts/install-deps.sh --test   also what the test suite needs: PropEr,
#                                    RabbitMQ (AMQP tests), Chromium (report tests),
#                                    Node.js (syntax check of the report's scripts),
#                                    python3-jsonschema (checks exported formats),
#                                    linux-perf (beamlab profile), Elixir (the
#                                    public API called from Elixir), Prometheus and
#                                    promtool (metrics tests), OTP 27 with
#                                    both emulator flavours built from source
#                                    (scripts/install-otp.sh, for otp27_SUITE
#                                    and jit_SUITE; about 10 min once) and
#                                    RabbitMQ 4.0 for it (scripts/install-rabbitmq.sh,
#                                    Debian trixie's package unpacked; seconds),
#                                    RabbitMQ PerfTest (scripts/install-perftest.sh:
#                                    Java 17 and Maven from Debian, PerfTest from
#                                    Maven Central; for jit_SUITE's --load-cmd case),
#                                    git and Elixir with the OTP applications Mix
#                                    needs (project_SUITE: a rebar3 and a Mix
#                                    project checked against a commit)
set -eu
here=$(dirname "$0")

BUILD_PKGS="erlang-nox erlang-dev erlang-eunit erlang-common-test erlang-dialyzer erlang-tools erlang-runtime-tools erlang-edoc rebar3"
TEST_PKGS="erlang-proper erlang-proper-dev git rabbitmq-server chromium linux-perf iproute2 procps prometheus elixir erlang-parsetools erlang-inets erlang-crypto erlang-public-key"

pkgs=$BUILD_PKGS
[ "${1:-}" = "--test" ] && pkgs="$pkgs $TEST_PKGS"

say() { printf 'install-deps: %s\n' "$*" >&2; }
# shellcheck source=scripts/install-common.sh
. "$here/install-common.sh"

# shellcheck disable=SC2086
missing=$(debian_missing $pkgs)
# Any node on the PATH will do for `node --check', any python3 with the
# jsonschema module for the format checks; else Debian's.
if [ "${1:-}" = "--test" ]; then
    command -v node >/dev/null 2>&1 || missing="$missing nodejs"
    python3 -c 'import jsonschema' >/dev/null 2>&1 || missing="$missing python3-jsonschema"
fi
otp27() {
    [ "${1:-}" = "--test" ] || return 0
    if [ "$(id -u)" -ne 0 ] && [ -z "${BEAMLAB_OTP27_PREFIX:-}" ]; then
        echo "the OTP 27 tests need scripts/install-otp.sh and scripts/install-rabbitmq.sh" \
             "(as root, or with BEAMLAB_OTP27_PREFIX and BEAMLAB_RABBITMQ40_PREFIX)" >&2
        return 0
    fi
    "$here/install-otp.sh"
    "$here/install-rabbitmq.sh"
    "$here/install-perftest.sh"
}

if [ -z "$missing" ]; then
    otp27 "${1:-}"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "beamlab needs these Debian packages:$missing" >&2
    echo "install them with: sudo apt-get install -y$missing" >&2
    exit 1
fi

echo "installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
# RabbitMQ must not be started as a system service: the tests start their own
# broker on 127.0.0.1 and stop it afterwards.
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >/dev/null
otp27 "${1:-}"
