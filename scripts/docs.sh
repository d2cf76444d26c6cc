#!/usr/bin/env bash
# Builds the documentation site (MkDocs + Material + mkdocstrings) into site/, strictly:
# any warning (a broken link, a docstring that does not parse) fails the build.
#
#   ./scripts/docs.sh          build site/
#   ./scripts/docs.sh serve    serve it on http://127.0.0.1:8000, rebuilding on changes
#
# The tools live in their own virtual environment, .venv-docs/, made on first use from
# docs/requirements.txt (reinstalled when that file is newer than its stamp). Building
# reads docstrings statically and imports neither TensorFlow nor trainexec's package
# dependencies beyond portpicker, so it takes seconds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"  # ROOT, PYTHON, ensure_venv
VENV="${TRAINEXEC_DOCS_VENV:-$ROOT/.venv-docs}"
REQUIREMENTS="$ROOT/docs/requirements.txt"
export NO_MKDOCS_2_WARNING=1

ensure_venv docs docs "$VENV" "$VENV/.docs-installed" "$REQUIREMENTS" "$REQUIREMENTS" \
  -r "$REQUIREMENTS"

cd "$ROOT"
case "${1:-build}" in
  build) shift || true
         started=$SECONDS
         "$VENV/bin/mkdocs" build --strict "$@"
         echo "[docs] built site/ in $((SECONDS - started)) s" ;;
  serve) shift
         exec "$VENV/bin/mkdocs" serve --strict "$@" ;;
  *) echo "docs.sh: unknown command '$1' (build or serve)" >&2; exit 2 ;;
esac
