#!/usr/bin/env bash
# Runs the whole test suite on both TensorFlow lines, creating their environments
# first if needed:
#   1. current TensorFlow, Keras 3 as tf.keras (tf.estimator tests skip: no tf.estimator;
#      trainexec.estimator's run, and read a checkpoint tf.estimator wrote in the 2.15
#      environment, which is made first);
#   2. current TensorFlow, tf_keras (TF_USE_LEGACY_KERAS=1): the Keras tests again;
#   3. TensorFlow 2.15 with tensorflow-estimator: the tests whose result can differ by
#      TensorFlow line (marked tf_line) and the Estimator tests; no Estimator test may
#      skip. The rest (any_line: the launcher, parsing, rendering, docs, the bed's
#      plumbing) cannot give another result there and runs once, in run 1.
# Extra arguments go to every pytest run, e.g. ./scripts/test.sh -m "not cluster" -x
# TRAINEXEC_TEST_LINES picks runs by number, e.g. TRAINEXEC_TEST_LINES="1 3".
# Without arguments, each run is two pytest runs: the tests that start no cluster on
# both cores (pytest-xdist, -n 2), then the cluster tests alone (they time processes).
# Each run leaves, in TRAINEXEC_TEST_REPORTS (default test-reports/): lineN.xml (JUnit),
# lineN.log (its whole output) and lineN-slowest.txt (its 40 slowest tests); the two
# parts' own files are lineN-unit.* and lineN-cluster.*.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
LINES_TO_RUN="${TRAINEXEC_TEST_LINES:-1 2 3}"
LOGS="${TRAINEXEC_TEST_REPORTS:-$ROOT/test-reports}"
mkdir -p "$LOGS"
summaries=()
status=0

run_line() {  # number, label, venv, [VAR=value...] -- pytest args
  local number="$1" label="$2" venv="$3"; shift 3
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  echo "[tests] ===== $number. $label ====="
  if [ "$#" -gt 0 ]; then  # the caller picks the tests: one run, as asked
    run_part "$number" "$label" "" "${envs[@]}" -- "$@"
    return
  fi
  # The tests that start no cluster are CPU-bound and independent: both cores
  # (pytest-xdist). The cluster tests time processes and faults: alone, after.
  run_part "$number" "$label, no cluster (2 processes)" unit "${envs[@]}" -- \
    -m "not cluster" -n 2
  run_part "$number" "$label, cluster" cluster "${envs[@]}" -- -m cluster
  # One JUnit file, one log and one slowest list per line, as for a single run.
  "$venv/bin/python" - "$LOGS/line$number" <<'MERGE'
import sys, xml.etree.ElementTree as ET
base = sys.argv[1]
merged = ET.Element("testsuites")
for part in ("unit", "cluster"):
    try:
        merged.extend(ET.parse(f"{base}-{part}.xml").getroot())
    except (OSError, ET.ParseError):
        pass
ET.ElementTree(merged).write(f"{base}.xml", encoding="utf-8", xml_declaration=True)
MERGE
  cat "$LOGS/line$number-unit.log" "$LOGS/line$number-cluster.log" > "$LOGS/line$number.log"
  cat "$LOGS/line$number-unit-slowest.txt" "$LOGS/line$number-cluster-slowest.txt" \
    > "$LOGS/line$number-slowest.txt"
}

run_part() {  # number, label, part ("" for the whole line), [VAR=value...] -- pytest args
  local number="$1" label="$2" name="line$1${3:+-$3}"; shift 3
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local log="$LOGS/$name.log" code=0 started=$SECONDS
  env "${envs[@]}" "$venv/bin/python" -m pytest --junitxml="$LOGS/$name.xml" \
    -o junit_suite_name="line$number" "$@" \
    2>&1 | tee "$log" || code=$?
  # pytest's "slowest 40 durations" block (pytest.ini's --durations=40), kept apart.
  sed -n '/slowest [0-9]* durations/,/^$/p' "$log" > "$LOGS/$name-slowest.txt" || true
  # pytest's own closing line: "=== 230 passed, 12 skipped in 95.2s ===", or without
  # the rules under -q; none at all if pytest died first.
  local closing
  closing="$( (grep -E '^(=+ )?[0-9]+ (passed|failed|errors?|skipped|deselected)|no tests ran' \
               "$log" || true) | tail -n 1 | sed -E 's/^=+ //; s/ =+$//')"
  [ "$code" -eq 5 ] && code=0  # a filtered run that selects nothing is not a failure
  [ "$code" -ne 0 ] && status=1
  summaries+=("[tests] $number. $label: ${closing:-no result} ($((SECONDS - started)) s, exit $code)")
}

for number in $LINES_TO_RUN; do
  case "$number" in
    1) venv="$(trainexec_env current)"
       # The cross-line test writes a checkpoint with tf.estimator on 2.15 first.
       tf215="$(trainexec_env tf2.15)"
       run_line 1 "TensorFlow $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("tensorflow"))' 2>/dev/null), Keras 3" \
         "$venv" TF_USE_LEGACY_KERAS=0 TRAINEXEC_TF215_PYTHON="$tf215/bin/python" -- "$@" ;;
    2) venv="$(trainexec_env current)"
       run_line 2 "TensorFlow $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("tensorflow"))' 2>/dev/null), tf_keras (Keras 2)" \
         "$venv" TF_USE_LEGACY_KERAS=1 TRAINEXEC_KERAS_TESTS_ONLY=1 -- "$@" ;;
    3) venv="$(trainexec_env tf2.15)"
       run_line 3 "TensorFlow 2.15 + tensorflow-estimator" \
         "$venv" TRAINEXEC_REQUIRE_ESTIMATOR=1 TRAINEXEC_TF_LINE_TESTS_ONLY=1 -- "$@" ;;
    *) echo "TRAINEXEC_TEST_LINES: unknown run '$number' (1, 2 or 3)" >&2; exit 2 ;;
  esac
done

echo "[tests] ===== summary ===== (JUnit files, logs and slowest tests in $LOGS)"
printf '%s\n' "${summaries[@]}"
# One closing line over every run, in the plain "N passed, N failed" form.
printf '%s\n' "${summaries[@]}" | awk '
  { for (i = 1; i < NF; i++) {
      w = $(i + 1); sub(/,$/, "", w)
      if (w == "passed") p += $i; else if (w == "failed") f += $i
      else if (w == "skipped") s += $i; else if (w == "error" || w == "errors") e += $i } }
  END { printf "total: %d passed, %d failed, %d skipped\n", p, f + e, s }'
# The suite's time, environments included: what its budget (45 minutes on 2 cores) counts.
echo "[tests] the whole run took $SECONDS s"
exit "$status"
