#!/usr/bin/env bash
# Install faers-anon with its test tools into .venv and run lint, type checks and the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# the versions the suite last passed with (scripts/test-constraints.txt says why)
.venv/bin/python -m pip install -q -e '.[dev]' -c scripts/test-constraints.txt
exec .venv/bin/python -m pytest -n 2 -p no:cacheprovider "$@"
