#!/bin/sh
# The full test suite: unit tests and properties (EUnit), CLI and integration
# suites (Common Test, through the built ./beamlab, with a private RabbitMQ
# and headless Chromium), then dialyzer and xref. Exits non-zero on any failure.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh --test

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

step "CLI and integration suites (Common Test)"
rebar3 ct

step "xref"
rebar3 xref

step "dialyzer"
rebar3 dialyzer

printf '\nall checks passed\n'
