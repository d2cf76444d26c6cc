#!/usr/bin/env bash
# Runs the whole test suite, creating the environment first if needed.
# Extra arguments go to pytest, e.g. ./scripts/test.sh -m "not cluster" -x
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
exec python -m pytest "$@"
