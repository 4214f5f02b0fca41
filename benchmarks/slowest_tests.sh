#!/usr/bin/env bash
# The suite's wall time and its fifteen slowest tests, on this machine's cores.
# Usage: bash benchmarks/slowest_tests.sh   (prints pytest's --durations table)
set -euo pipefail
cd "$(dirname "$0")/.."
echo "cores: $(nproc)"
python -m pytest -n "$(nproc)" -q --durations=15 -p no:randomly "$@" | tail -25
