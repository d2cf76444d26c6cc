# Sourced by the scripts in this folder. Defines `ensure_venv` (below, also docs.sh's) and
# `trainexec_env LINE`, which creates (if missing) the virtual environment of one
# TensorFlow line, installs trainexec into it and prints its directory:
#
#   current  .venv          newest TensorFlow (Keras 3 as tf.keras) + tf_keras
#   tf2.15   .venv-tf2.15   TensorFlow 2.15 + tensorflow-estimator 2.15 (Estimators)
#
# An environment is reinstalled when setup.py is newer than its stamp file. Two
# environments may be made at once (.ci/run does): their dependencies are installed
# side by side, and trainexec itself, whose build writes trainexec.egg-info/ and build/
# in this tree, by one pip at a time (a lock on setup.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"

# stale STAMP SOURCE: true when STAMP is missing or SOURCE is newer than it.
stale() { [ ! -f "$1" ] || [ "$2" -nt "$1" ]; }

# ensure_venv TAG NAME VENV STAMP SOURCE WHAT PIP-INSTALL-ARGS...: creates VENV if missing
# and runs `pip install PIP-INSTALL-ARGS` in it when SOURCE is newer than STAMP, saying
# so on stderr as "[TAG] ..." (NAME and WHAT name the environment and what goes in).
ensure_venv() {
  local tag="$1" name="$2" venv="$3" stamp="$4" source="$5" what="$6"
  shift 6
  if [ ! -x "$venv/bin/python" ]; then
    echo "[$tag] creating the $name environment in $venv" >&2
    "$PYTHON" -m venv "$venv" >&2
  fi
  if stale "$stamp" "$source"; then
    echo "[$tag] installing $what into $venv" >&2
    local started=$SECONDS
    # `|| return`: under $(...) or a `&&` list bash ignores `set -e`; the stamp is
    # written only after both installs succeeded.
    "$venv/bin/python" -m pip install --quiet --upgrade pip >&2 || return
    "$venv/bin/python" -m pip install --quiet "$@" >&2 || return
    touch "$stamp"
    echo "[$tag] $name environment: packages installed in $((SECONDS - started)) s" >&2
  fi
}

# trainexec_requirements EXTRAS: trainexec's requirements and those of EXTRAS (a comma-
# separated list), one a line, read from setup.py's setup() call without building
# anything (a stand-in `setuptools` module records the call's arguments).
trainexec_requirements() {
  "$PYTHON" - "$ROOT/setup.py" "$1" <<'READ'
import sys, types
path, extras = sys.argv[1], sys.argv[2]
arguments = {}
stand_in = types.ModuleType("setuptools")
stand_in.setup = lambda **kwargs: arguments.update(kwargs)
stand_in.find_packages = lambda *args, **kwargs: []
sys.modules["setuptools"] = stand_in
sys.argv = [path]
with open(path, encoding="utf-8") as source:
    exec(compile(source.read(), path, "exec"), {"__file__": path, "__name__": "__main__"})
wanted = [arguments["install_requires"]]
wanted += [arguments["extras_require"][name] for name in filter(None, extras.split(","))]
for requirements in wanted:  # lists of PEP 508 strings, none naming trainexec itself
    assert isinstance(requirements, list), f"setup.py: not a list: {requirements!r}"
    assert not any(r.startswith("trainexec") for r in requirements), requirements
    print(*requirements, sep="\n")
READ
}

trainexec_env() {
  local line="$1" venv extras
  case "$line" in
    current) venv="${TRAINEXEC_VENV:-$ROOT/.venv}"; extras="test,tf-keras" ;;
    tf2.15) venv="${TRAINEXEC_VENV_TF215:-$ROOT/.venv-tf2.15}"; extras="test,estimator" ;;
    *) echo "trainexec_env: unknown TensorFlow line '$line' (current or tf2.15)" >&2
       return 2 ;;
  esac
  local stamp="$venv/.trainexec-installed"
  if stale "$stamp" "$ROOT/setup.py"; then
    local listed requirements
    listed="$(trainexec_requirements "$extras")" || return
    mapfile -t requirements <<< "$listed"
    ensure_venv setup "$line" "$venv" "$venv/.trainexec-dependencies" "$ROOT/setup.py" \
      "trainexec[$extras]'s dependencies (a few minutes the first time)" \
      "${requirements[@]}" || return
    # trainexec itself, editable, without its dependencies (in already): one pip at a
    # time in this tree.
    flock "$ROOT/setup.py" "$venv/bin/python" -m pip install --quiet --no-deps \
      -e "$ROOT[$extras]" >&2 || return
    touch "$stamp"
    echo "[setup] $line environment ready (trainexec editable in it): $venv" >&2
  fi
  echo "$venv"
}
