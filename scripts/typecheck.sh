#!/usr/bin/env bash
# Type-checks the trainexec package with mypy, as CI does: the repository's mypy.ini, in
# the current TensorFlow line's environment (.venv, made on first use; the `test` extra
# installs mypy). Exits 0 when mypy finds no error, else mypy's code (1 for errors).
#
#   ./scripts/typecheck.sh                        the package, with mypy.ini
#   ./scripts/typecheck.sh trainexec/launch       part of it (arguments go to mypy)
#   TRAINEXEC_MYPY_CONFIG=FILE ./scripts/typecheck.sh   another configuration file
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"  # ROOT, trainexec_env
VENV="$(trainexec_env current)"
CONFIG="${TRAINEXEC_MYPY_CONFIG:-$ROOT/mypy.ini}"

cd "$ROOT"  # mypy reads this tree's trainexec, whatever the environment has installed
[ "$#" -gt 0 ] || set -- trainexec
started=$SECONDS
code=0
"$VENV/bin/python" -m mypy --config-file "$CONFIG" "$@" || code=$?
echo "[typecheck] mypy --config-file ${CONFIG#"$ROOT/"} $*: exit $code ($((SECONDS - started)) s)"
exit "$code"
