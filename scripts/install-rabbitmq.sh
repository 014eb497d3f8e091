#!/bin/sh
# Installs RabbitMQ 4.0 from Debian trixie's rabbitmq-server package into a
# private prefix, unpacked without its dependencies and never as a service,
# so beamlab can start private brokers on the OTP 27 that
# scripts/install-otp.sh builds, under both emulator flavours (Debian 12's
# rabbitmq-server 3.10 runs on OTP 23.2 to 25 only; RabbitMQ 4.0 needs OTP
# 26.2 or later). The package is architecture `all': Erlang code and shell
# scripts, which run `erl' from PATH (scripts/rabbitmq.sh and
# `beamlab matrix --target rabbitmq --otp DIR' put that OTP first there).
#
#   scripts/install-rabbitmq.sh       install into /opt/beamlab-rabbitmq/4.0
#   BEAMLAB_RABBITMQ40_PREFIX=DIR scripts/install-rabbitmq.sh
#
# Afterwards DIR/bin holds rabbitmq-server, rabbitmqctl, ... Idempotent: does
# nothing when DIR already holds this version.
# The package is found through apt (a private sources list for trixie on the
# Debian mirror this machine already uses; apt checks the index's signature);
# its SHA-256 must equal both the one pinned below and the one in that signed
# index.
set -eu

PREFIX=${BEAMLAB_RABBITMQ40_PREFIX:-/opt/beamlab-rabbitmq/4.0}
DEB_VERSION=4.0.5-6+deb13u2
DEB=rabbitmq-server_${DEB_VERSION}_all.deb
DEB_SHA256=2d77b12be64d480db03489825b96d241dbd38db59673adccf5b5feefacdf8e41
SERVER=rabbitmq_server-4.0.5

say() { printf 'install-rabbitmq: %s\n' "$*" >&2; }
# shellcheck source=scripts/install-common.sh
. "$(dirname "$0")/install-common.sh"

if [ "$(cat "$PREFIX/DEB_VERSION" 2>/dev/null || true)" = "$DEB_VERSION" ] &&
   [ -x "$PREFIX/bin/rabbitmq-server" ]; then
    exit 0
fi

prefix_writable "$PREFIX" BEAMLAB_RABBITMQ40_PREFIX
for tool in curl dpkg-deb sha256sum; do
    command -v "$tool" >/dev/null 2>&1 || { say "needs $tool (apt-get install curl dpkg)"; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/beamlab-rabbitmq.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

# shellcheck source=scripts/trixie-apt.sh
. "$(dirname "$0")/trixie-apt.sh"
trixie_apt_init "$work" deb
line=$(trixie_uri_line "rabbitmq-server=$DEB_VERSION" "$DEB")
if [ -z "$line" ]; then
    say "apt knows no $DEB in trixie (the archive moved on? update DEB_VERSION and DEB_SHA256)"
    exit 1
fi
if [ "$(trixie_sha256 "$line")" != "$DEB_SHA256" ]; then
    say "the signed index gives $DEB SHA-256 $(trixie_sha256 "$line"), pinned $DEB_SHA256"
    exit 1
fi
say "downloading $DEB"
curl -fsS -o "$work/$DEB" "$(trixie_uri "$line")"
echo "$DEB_SHA256  $work/$DEB" | sha256sum -c --quiet - || { say "$DEB: SHA-256 mismatch"; exit 1; }

# Unpacked, not installed: no maintainer scripts, no service, no user.
dpkg-deb -x "$work/$DEB" "$work/root"
lib="$work/root/usr/lib/rabbitmq"
[ -x "$lib/lib/$SERVER/sbin/rabbitmq-server" ] || { say "$DEB holds no $SERVER/sbin/rabbitmq-server"; exit 1; }
stage="$work/stage"
mkdir -p "$stage/share/doc"
# bin/ holds relative links into lib/$SERVER/sbin; the scripts find their
# home by resolving them.
cp -a "$lib/bin" "$lib/lib" "$stage/"
cp -a "$work/root/usr/share/doc/rabbitmq-server" "$stage/share/doc/"
echo "$DEB_VERSION" > "$stage/DEB_VERSION"
rm -rf "$PREFIX"
mkdir -p "$(dirname "$PREFIX")"
mv "$stage" "$PREFIX"
say "RabbitMQ $DEB_VERSION unpacked into $PREFIX (broker: $PREFIX/bin/rabbitmq-server; runs on OTP 26.2 or later)"
