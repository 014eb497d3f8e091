#!/bin/sh
# The full test suite: unit tests and properties (EUnit), CLI and integration
# suites (Common Test, through the built ./beamlab, with a private RabbitMQ
# and headless Chromium), then dialyzer and xref. Exits non-zero on any failure.
#
#   scripts/test.sh           everything (what CI runs, .ci/run)
#   scripts/test.sh --quick   the edit-test loop: EUnit and properties, xref,
#                             dialyzer and the smoke group of Common Test (a
#                             handful of command lines through ./beamlab);
#                             no dependency installation (run the full tier,
#                             or scripts/install-deps.sh --test, once first)
set -eu
cd "$(dirname "$0")/.."

case "${1:-}" in
    "") quick=false ;;
    --quick) quick=true ;;
    *) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
esac

$quick || ./scripts/install-deps.sh --test

step() { printf '\n==> %s\n' "$*"; }

# The tests' working directories go under one directory of this run:
# removed when every check passed, kept (and named) when one failed.
BEAMLAB_TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/beamlab-tests.XXXXXX")
export BEAMLAB_TEST_TMP
trap 'st=$?; if [ "$st" = 0 ]; then rm -rf "$BEAMLAB_TEST_TMP"; else echo "test files kept in $BEAMLAB_TEST_TMP" >&2; fi' EXIT

step "build ./beamlab"
make escript

step "unit tests and properties (EUnit)"
rebar3 eunit

if $quick; then
    step "smoke group (Common Test)"
    rebar3 ct --suite=test/smoke_SUITE --group=smoke
else
    step "CLI and integration suites (Common Test)"
    rebar3 ct
fi

step "xref"
rebar3 xref

step "dialyzer"
rebar3 dialyzer

if $quick; then
    printf '\nquick checks passed (the full run: scripts/test.sh)\n'
else
    printf '\nall checks passed\n'
fi
