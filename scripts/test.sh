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
# both cores (pytest-xdist, -n 2), and the cluster tests alone (they time processes).
# The runs' cluster parts go one after the other in the foreground; meanwhile their
# no-cluster parts run one after the other in the background at the lowest CPU
# priority (nice 19), so they take only the cores the cluster tests leave idle (most:
# those wait on processes and faults); their logs are printed after.
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

run_line() {  # number, label, venv, part (unit, cluster or ""), [VAR=value...] -- pytest args
  local number="$1" label="$2" venv="$3" part="$4"; shift 4
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  case "$part" in
    "") echo "[tests] ===== $number. $label ====="  # the caller picks the tests: one run
        run_part "$number" "$label" "" "${envs[@]}" -- "$@" ;;
    # The tests that start no cluster are CPU-bound and independent: both cores
    # (pytest-xdist), at the lowest priority, beside the cluster parts.
    # With them, the cluster tests that time nothing (`untimed`: pip, one process).
    unit) run_part "$number" "$label, no cluster (2 processes, nice 19)" unit \
            "${envs[@]}" -- -m "not cluster or untimed" -n 2 ;;
    # The cluster tests time processes and faults: one at a time, at normal priority.
    cluster) echo "[tests] ===== $number. $label ====="
             run_part "$number" "$label, cluster" cluster "${envs[@]}" -- \
               -m "cluster and not untimed" ;;
  esac
}

merge_line() {  # number, venv: one JUnit file, one log and one slowest list per line
  local number="$1" venv="$2"
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
  local number="$1" label="$2" part="$3" name="line$1${3:+-$3}"; shift 3
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local log="$LOGS/$name.log" code=0 started=$SECONDS
  if [ "$part" = unit ]; then  # in the background: its log only, printed at the end
    nice -n 19 env "${envs[@]}" "$venv/bin/python" -m pytest \
      --junitxml="$LOGS/$name.xml" -o junit_suite_name="line$number" "$@" \
      > "$log" 2>&1 || code=$?
  else
    env "${envs[@]}" "$venv/bin/python" -m pytest --junitxml="$LOGS/$name.xml" \
      -o junit_suite_name="line$number" "$@" \
      2>&1 | tee "$log" || code=$?
  fi
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

# Each run's label, environment and variables, the environments made first (one after
# the other: each pip builds trainexec in this tree).
declare -A LABEL VENV VARS
for number in $LINES_TO_RUN; do
  case "$number" in
    1) VENV[1]="$(trainexec_env current)"
       # The cross-line test writes a checkpoint with tf.estimator on 2.15 first.
       tf215="$(trainexec_env tf2.15)"
       LABEL[1]="TensorFlow $("${VENV[1]}/bin/python" -c 'import importlib.metadata as m; print(m.version("tensorflow"))' 2>/dev/null), Keras 3"
       VARS[1]="TF_USE_LEGACY_KERAS=0 TRAINEXEC_TF215_PYTHON=$tf215/bin/python" ;;
    2) VENV[2]="$(trainexec_env current)"
       LABEL[2]="TensorFlow $("${VENV[2]}/bin/python" -c 'import importlib.metadata as m; print(m.version("tensorflow"))' 2>/dev/null), tf_keras (Keras 2)"
       VARS[2]="TF_USE_LEGACY_KERAS=1 TRAINEXEC_KERAS_TESTS_ONLY=1" ;;
    3) VENV[3]="$(trainexec_env tf2.15)"
       LABEL[3]="TensorFlow 2.15 + tensorflow-estimator"
       VARS[3]="TRAINEXEC_REQUIRE_ESTIMATOR=1 TRAINEXEC_TF_LINE_TESTS_ONLY=1" ;;
    *) echo "TRAINEXEC_TEST_LINES: unknown run '$number' (1, 2 or 3)" >&2; exit 2 ;;
  esac
done

stop_tree() {  # pid: ends a process and every process under it
  local child
  kill -STOP "$1" 2>/dev/null || return 0  # held, it starts nothing more
  for child in $(pgrep -P "$1"); do stop_tree "$child"; done
  kill -TERM "$1" 2>/dev/null; kill -CONT "$1" 2>/dev/null || true
}

run() {  # number, part, pytest args...: one part of one run (paths hold no space)
  local number="$1" part="$2"; shift 2
  venv="${VENV[$number]}"
  # shellcheck disable=SC2086  # VARS holds VAR=value words
  run_line "$number" "${LABEL[$number]}" "$venv" "$part" ${VARS[$number]} -- "$@"
}

if [ "$#" -gt 0 ]; then  # the caller picks the tests: one pytest run per line, as asked
  for number in $LINES_TO_RUN; do run "$number" "" "$@"; done
else
  unit_summaries="$LOGS/.unit-summaries"
  : > "$unit_summaries"
  echo "[tests] the no-cluster parts run in the background at nice 19; their logs follow the cluster parts"
  ( summaries=(); status=0
    for number in $LINES_TO_RUN; do run "$number" unit; done
    printf '%s\n' "${summaries[@]}" > "$unit_summaries"
    exit "$status" ) &
  units=$!
  # Should this script end early (an error, Ctrl-C, CI's time limit), they end with it;
  # a kill of the whole process group reaches them too (they stay in this one).
  trap 'stop_tree "$units"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  for number in $LINES_TO_RUN; do run "$number" cluster; done
  wait "$units" || status=1
  trap - EXIT
  for number in $LINES_TO_RUN; do
    echo "[tests] ===== $number. ${LABEL[$number]}, no cluster (its log) ====="
    cat "$LOGS/line$number-unit.log"
    merge_line "$number" "${VENV[$number]}"
  done
  mapfile -t unit_lines < "$unit_summaries"
  summaries=("${unit_lines[@]}" "${summaries[@]}")
fi

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
