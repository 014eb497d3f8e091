#!/bin/sh
# Installs RabbitMQ PerfTest (the Java load tool whose output `beamlab amqp'
# keeps) from Maven Central into a private prefix, with a launcher, so it
# can be the load of `beamlab matrix --target rabbitmq --load-cmd' and of the
# bench scripts that compare beamlab amqp with it:
#
#   scripts/install-perftest.sh          install into /opt/beamlab-perftest/2.22.1
#   BEAMLAB_PERFTEST_PREFIX=DIR scripts/install-perftest.sh
#
# Afterwards DIR/bin/perftest runs `java com.rabbitmq.perf.PerfTest' with its
# jars (DIR/lib): DIR/bin/perftest -h amqp://... -x 1 -y 1 -z 10.
# Needs Java 17 and Maven (Debian packages openjdk-17-jre-headless and maven;
# as root they are installed when missing). Idempotent.
set -eu

PT_VERSION=2.22.1
PREFIX=${BEAMLAB_PERFTEST_PREFIX:-/opt/beamlab-perftest/$PT_VERSION}
here=$(cd "$(dirname "$0")" && pwd)

say() { printf 'install-perftest: %s\n' "$*" >&2; }
# shellcheck source=scripts/install-common.sh
. "$here/install-common.sh"

if [ -x "$PREFIX/bin/perftest" ] && [ -f "$PREFIX/lib/perf-test-$PT_VERSION.jar" ]; then
    exit 0
fi

missing=""
command -v java >/dev/null 2>&1 || missing="$missing openjdk-17-jre-headless"
command -v mvn >/dev/null 2>&1 || missing="$missing maven"
# shellcheck disable=SC2086
apt_install_missing $missing
prefix_writable "$PREFIX" BEAMLAB_PERFTEST_PREFIX

stage=$(mktemp -d "${TMPDIR:-/tmp}/beamlab-perftest.XXXXXX")
trap 'rm -rf "$stage"' EXIT INT TERM
# bench/perftest-fetch.sh fetches PerfTest and its dependencies into $WORK/lib.
WORK=$stage
# shellcheck source=bench/perftest-fetch.sh
. "$here/../bench/perftest-fetch.sh"
fetch_perftest
[ -f "$stage/lib/perf-test-$PT_VERSION.jar" ] || { say "Maven fetched no perf-test-$PT_VERSION.jar"; exit 1; }
mkdir -p "$stage/bin"
cat > "$stage/bin/perftest" <<'SH'
#!/bin/sh
# RabbitMQ PerfTest, as installed by beamlab's scripts/install-perftest.sh.
lib=$(cd "$(dirname "$0")/../lib" && pwd)
exec java ${PERFTEST_JAVA_OPTS:-} -cp "$lib/*" com.rabbitmq.perf.PerfTest "$@"
SH
chmod 755 "$stage/bin/perftest"
rm -f "$stage/pom.xml"
rm -rf "$PREFIX"
mkdir -p "$(dirname "$PREFIX")"
mv "$stage" "$PREFIX"
trap - EXIT INT TERM
chmod 755 "$PREFIX"
say "PerfTest $PT_VERSION installed: $PREFIX/bin/perftest"
