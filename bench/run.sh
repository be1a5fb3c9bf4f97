#!/bin/sh
# Runs every benchmark; each prints its figures and a ratio against a peer
# measured in the same run. Record results in bench/RESULTS.md.
# Not part of `make test`: timings are reported, never asserted.
set -eu
cd "$(dirname "$0")/.."
python3 bench/sandbox.py "$@"
