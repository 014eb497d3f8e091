#!/bin/sh
# The full test suite: unit tests and properties (EUnit), CLI and integration
# suites (Common Test, through the built ./beamlab, with a private RabbitMQ
# and headless Chromium), then dialyzer and xref. Exits non-zero on any failure.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh --test

step() { printf '\n==> %s\n' "$*"; }

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
