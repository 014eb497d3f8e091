#!/bin/sh
# Quick start: install what is missing, build ./beamlab, run a real benchmark.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
make escript >/dev/null
echo "built ./beamlab; running: ./beamlab 'rand:uniform().' 'rand:uniform(1000).' -s 5 -d 500" >&2
./beamlab 'rand:uniform().' 'rand:uniform(1000).' -s 5 -d 500
