#!/bin/sh
# Builds Erlang/OTP 27 from Debian trixie's source package into a private
# prefix, so beamlab and its tests can run on a newer OTP than Debian 12's 25
# (Debian's own OTP 27 binaries need trixie's glibc). Both emulator flavours
# are built and installed side by side: the JIT (the default, `beam.smp`,
# also `-emu_flavor jit`) and the interpreter (`-emu_flavor emu`), so the
# same release can be measured under each (docs/jit-study.md). It also runs
# RabbitMQ 4.0 (scripts/install-rabbitmq.sh), which needs OTP 26.2 or later.
#
#   scripts/install-otp.sh            build into /opt/beamlab-otp/27
#   BEAMLAB_OTP27_PREFIX=DIR scripts/install-otp.sh
#
# Idempotent: does nothing when the prefix already holds a working OTP 27
# whose two flavours both start.
# The source is Debian's orig tarball of erlang 1:27.3.4.1+dfsg-1+deb13u4,
# found through apt (a private deb-src list for trixie on the Debian mirror
# this machine already uses; apt checks the index's signature). The tarball's
# SHA-256 must equal the one in the package's .dsc (pinned below) and the one
# in that signed index (the .dsc's Checksums-Sha256 as apt lists them); when
# the mirror still serves the .dsc itself (the pool keeps only some versions'),
# the pinned checksum is also checked against it.
# The build is minimal (no wx, Java, ODBC or docs; applications neither
# beamlab nor its tests use are skipped), runs under `nice -n 19` with -j$(nproc),
# and keeps the emulator's symbols (beam.smp is not stripped), so
# `beamlab profile` can name emulator C functions such as the garbage collector.
set -eu

PREFIX=${BEAMLAB_OTP27_PREFIX:-/opt/beamlab-otp/27}
RELEASE=27
DEB_VERSION=1:27.3.4.1+dfsg-1+deb13u4
ORIG=erlang_27.3.4.1+dfsg.orig.tar.xz
# Checksums-Sha256 of $ORIG in erlang_27.3.4.1+dfsg-1+deb13u4.dsc
ORIG_SHA256=0834643ef1e17886d5e334a39527d8429bcf50613b86d59d4757466f32984b7e
ORIG_SIZE=47613664
# Build-time packages (bookworm's): compiler, OpenSSL and ncurses headers.
BUILD_PKGS="gcc g++ make perl libssl-dev libncurses-dev zlib1g-dev xz-utils curl ca-certificates"
# Not built besides wx, Java and ODBC (configure flags below): applications
# neither beamlab nor its OTP 27 tests use (common_test also misses files the
# +dfsg tarball drops, and its install fails).
# eldap stays: RabbitMQ 4.0's package depends on it.
SKIP_APPS="jinterface megaco diameter snmp debugger observer et common_test dialyzer edoc ftp tftp reltool"

say() { printf 'install-otp: %s\n' "$*" >&2; }
# shellcheck source=scripts/install-common.sh
. "$(dirname "$0")/install-common.sh"

# Prints the release when both flavours start and say which they are.
working_release() {
    [ -x "$PREFIX/bin/erl" ] || return 1
    for f in jit emu; do
        got=$("$PREFIX/bin/erl" -emu_flavor "$f" -noshell -noinput \
            -eval 'io:put_chars(atom_to_list(erlang:system_info(emu_flavor))), halt(0).' 2>/dev/null) || return 1
        [ "$got" = "$f" ] || return 1
    done
    "$PREFIX/bin/erl" -noshell -noinput \
        -eval 'io:put_chars(erlang:system_info(otp_release)), halt(0).' 2>/dev/null
}

if [ "$(working_release || true)" = "$RELEASE" ]; then
    exit 0
fi

prefix_writable "$PREFIX" BEAMLAB_OTP27_PREFIX
# shellcheck disable=SC2086
apt_install_missing $(debian_missing $BUILD_PKGS)

work=$(mktemp -d "${TMPDIR:-/tmp}/beamlab-otp-build.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

# --- locate the source through apt --------------------------------------
# shellcheck source=scripts/trixie-apt.sh
. "$(dirname "$0")/trixie-apt.sh"
trixie_apt_init "$work" deb-src
orig_line=$(trixie_uri_line "erlang=$DEB_VERSION" "$ORIG" source)
if [ -z "$orig_line" ]; then
    say "apt knows no $ORIG for erlang $DEB_VERSION in trixie"
    exit 1
fi
orig_uri=$(trixie_uri "$orig_line")
index_sha=$(trixie_sha256 "$orig_line")
if [ "$index_sha" != "$ORIG_SHA256" ]; then
    say "the signed index gives $ORIG SHA-256 $index_sha, the .dsc $ORIG_SHA256"
    exit 1
fi
# When the mirror still serves the .dsc, check the pinned checksum against it.
dsc_line=$(trixie_uri_line "erlang=$DEB_VERSION" "erlang_${DEB_VERSION#*:}.dsc" source)
dsc_uri=$(trixie_uri "$dsc_line")
if [ -n "$dsc_uri" ] && curl -fsS -o "$work/erlang.dsc" "$dsc_uri" 2>/dev/null; then
    echo "$(trixie_sha256 "$dsc_line")  $work/erlang.dsc" | sha256sum -c --quiet - ||
        { say ".dsc does not match the signed index"; exit 1; }
    grep -q "^ $ORIG_SHA256 $ORIG_SIZE $ORIG\$" "$work/erlang.dsc" ||
        { say "$ORIG's checksum is not the one in the .dsc"; exit 1; }
fi

say "downloading $ORIG"
curl -fsS -o "$work/$ORIG" "$orig_uri"
echo "$ORIG_SHA256  $work/$ORIG" | sha256sum -c --quiet - ||
    { say "$ORIG: SHA-256 mismatch"; exit 1; }

# --- build ---------------------------------------------------------------
tar -C "$work" -xJf "$work/$ORIG"
src="$work/otp-OTP-27.3.4.1"
[ -x "$src/configure" ] || { say "no configure script in $ORIG"; exit 1; }

without=""
for a in $SKIP_APPS; do without="$without --without-$a"; done
jobs=$(nproc)
start=$(date +%s)
say "building OTP $RELEASE in $src (nice -n 19, -j$jobs); this takes a while"
(
    cd "$src"
    export ERL_TOP="$src"
    # shellcheck disable=SC2086
    nice -n 19 ./configure --prefix="$PREFIX" --without-javac --without-wx \
        --without-odbc $without --enable-jit >"$work/configure.log" 2>&1 ||
        { tail -n 30 "$work/configure.log" >&2; exit 1; }
    nice -n 19 make -j"$jobs" >"$work/make.log" 2>&1 ||
        { tail -n 40 "$work/make.log" >&2; exit 1; }
    # The interpreter: only the emulator is compiled again (the applications'
    # BEAM files are the same for both flavours).
    nice -n 19 make -C erts/emulator -j"$jobs" FLAVOR=emu >"$work/make-emu.log" 2>&1 ||
        { tail -n 40 "$work/make-emu.log" >&2; exit 1; }
    nice -n 19 make DESTDIR="$work/stage" install >"$work/install.log" 2>&1 ||
        { tail -n 30 "$work/install.log" >&2; exit 1; }
    # `make install` installs the primary flavour as beam.smp only; erlexec
    # looks for beam.<flavour> when -emu_flavor is given.
    target=$(ls -d "$src"/bin/*-linux-* | head -n 1)
    ertsbin=$(ls -d "$work/stage$PREFIX"/lib/erlang/erts-*/bin | head -n 1)
    for f in jit emu; do
        [ -x "$target/beam.$f" ] || { say "the build made no beam.$f"; exit 1; }
        install -m 755 "$target/beam.$f" "$ertsbin/beam.$f"
    done
)
rm -rf "$PREFIX"
mkdir -p "$(dirname "$PREFIX")"
mv "$work/stage$PREFIX" "$PREFIX"
if [ "$(working_release || true)" != "$RELEASE" ]; then
    say "the built $PREFIX/bin/erl does not run under both flavours (jit, emu)"
    exit 1
fi
say "OTP $RELEASE (jit and emu) installed in $PREFIX ($(($(date +%s) - start)) s to build)"
