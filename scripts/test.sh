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
# Without arguments, each run is two pytest runs. Its cluster part (the cluster tests,
# which time processes and faults, and the `timed` tests, which bound real time) runs
# in the foreground, one run after the other, at normal priority. Meanwhile the runs'
# no-cluster parts (the tests that start no cluster, on both cores with pytest-xdist,
# and the `untimed` cluster tests) run one after the other in the background at idle
# priority (chrt --idle, ionice -c 3: the CPU and disk the cluster tests do not take;
# nice 10 where the kernel has no idle class); their logs are printed after. Both cores
# are busy while they run, and the cluster tests run somewhat slower beside them
# (CONTRIBUTING's test-suite section has the figures). A run's multi-host tests (the
# ones the background slows most) come last in it (conftest.py).
# Each run leaves, in TRAINEXEC_TEST_REPORTS (default test-reports/): lineN.xml (JUnit),
# lineN.log (its whole output) and lineN-slowest.txt (its 40 slowest tests); the two
# parts' own files are lineN-unit.* and lineN-cluster.*.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
# Bytecode is written (in __pycache__/, which git ignores) even where the environment
# says not to: a run starts hundreds of Python processes (pods, launchers, pytest and
# its workers, pytest in tests), which then read trainexec and the tests compiled, and
# pytest keeps the test modules it rewrote (CONTRIBUTING's variable table: the time
# saved).
unset PYTHONDONTWRITEBYTECODE
LINES_TO_RUN="${TRAINEXEC_TEST_LINES:-1 2 3}"
LOGS="${TRAINEXEC_TEST_REPORTS:-$ROOT/test-reports}"
mkdir -p "$LOGS"
summaries=()
status=0

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
  # A part that died before writing its files leaves the other's (and its summary line).
  cat "$LOGS/line$number-unit.log" "$LOGS/line$number-cluster.log" \
    > "$LOGS/line$number.log" 2>/dev/null || true
  cat "$LOGS/line$number-unit-slowest.txt" "$LOGS/line$number-cluster-slowest.txt" \
    > "$LOGS/line$number-slowest.txt" 2>/dev/null || true
}

run_part() {  # number, label, part ("" for the whole line), [VAR=value...] -- pytest args
  local number="$1" label="$2" part="$3" name="line$1${3:+-$3}"; shift 3
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local log="$LOGS/$name.log" code=0 started=$SECONDS
  if [ "$part" = unit ]; then  # in the background: its log only, printed at the end
    "${LOW_PRIORITY[@]}" env "${envs[@]}" "$venv/bin/python" -m pytest \
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
  # The background's lines reach the summary through a file, each as its part ends.
  if [ "$part" = unit ]; then printf '%s\n' "${summaries[-1]}" >> "$LOGS/.unit-summaries"; fi
}

# Each run's label, environment and variables (one VAR=value a line), the environments
# made first where missing (scripts/env.sh; .ci/run makes both before).
declare -A LABEL VENV VARS
tf_version() {  # venv: its TensorFlow's version, "?" when it has none
  "$1/bin/python" -c 'import importlib.metadata as m; print(m.version("tensorflow"))' \
    2>/dev/null || echo "?"
}
for number in $LINES_TO_RUN; do
  case "$number" in
    1) VENV[1]="$(trainexec_env current)"
       # The cross-line tests write checkpoints with tf.estimator on 2.15.
       tf215="$(trainexec_env tf2.15)"
       LABEL[1]="TensorFlow $(tf_version "${VENV[1]}"), Keras 3"
       VARS[1]="TF_USE_LEGACY_KERAS=0"$'\n'"TRAINEXEC_TF215_PYTHON=$tf215/bin/python" ;;
    2) VENV[2]="$(trainexec_env current)"
       LABEL[2]="TensorFlow $(tf_version "${VENV[2]}"), tf_keras (Keras 2)"
       VARS[2]="TF_USE_LEGACY_KERAS=1"$'\n'"TRAINEXEC_KERAS_TESTS_ONLY=1" ;;
    3) VENV[3]="$(trainexec_env tf2.15)"
       LABEL[3]="TensorFlow 2.15 + tensorflow-estimator"
       VARS[3]="TRAINEXEC_REQUIRE_ESTIMATOR=1"$'\n'"TRAINEXEC_TF_LINE_TESTS_ONLY=1" ;;
    *) echo "TRAINEXEC_TEST_LINES: unknown run '$number' (1, 2 or 3)" >&2; exit 2 ;;
  esac
done
# The background parts' priority (see the top): the idle scheduling class where the
# kernel has it (a CPU, and with ionice the disk, only when the cluster tests leave it
# idle), else nice 10. Each part runs in a session of its own whose autogroup has nice
# 19: with autogroups (sched_autogroup_enabled) the kernel first shares the CPU between
# sessions, and every pod of a cluster test is a session of its own, so a background in
# this script's session would take half a core from each pod whatever its class
# (measured: a CPU loop ran 2.0x slower beside an idle-class one in another session,
# 1.0x once that session's autogroup had nice 19).
if chrt --idle 0 ionice -c 3 true 2>/dev/null; then
  LOW_PRIORITY=(chrt --idle 0 ionice -c 3) PRIORITY="idle priority"
else
  LOW_PRIORITY=(nice -n 10) PRIORITY="nice 10"
fi
if command -v setsid >/dev/null; then  # the session's autogroup, where there is one
  LOW_PRIORITY=(bash -c '{ echo 19 > /proc/self/autogroup; } 2>/dev/null
                         exec "$@"' low-priority "${LOW_PRIORITY[@]}")
  # Out of this script's process group, a part is killed with its parent (the
  # background's shell) should a kill of the group end that (setpriv), and stopped
  # with the rest by the EXIT trap (stop_tree) when this script ends early.
  if setpriv --pdeathsig KILL true 2>/dev/null; then
    LOW_PRIORITY=(setpriv --pdeathsig KILL "${LOW_PRIORITY[@]}")
  fi
  LOW_PRIORITY=(setsid -w "${LOW_PRIORITY[@]}")
fi

stop_tree() {  # pid: ends a process and every process under it
  local child
  kill -STOP "$1" 2>/dev/null || return 0  # held, it starts nothing more
  for child in $(pgrep -P "$1"); do stop_tree "$child"; done
  kill -TERM "$1" 2>/dev/null; kill -CONT "$1" 2>/dev/null || true
}

run() {  # number, part (unit, cluster, or "": the caller's tests), pytest args...
  local number="$1" part="$2" label="${LABEL[$1]}" vars; shift 2
  venv="${VENV[$number]}"
  mapfile -t vars <<< "${VARS[$number]}"
  case "$part" in
    "") echo "[tests] ===== $number. $label ====="  # the caller picks the tests: one run
        run_part "$number" "$label" "" "${vars[@]}" -- "$@" ;;
    # The tests that start no cluster are CPU-bound and independent: both cores
    # (pytest-xdist), at a low priority, beside the cluster parts; with them the
    # cluster tests that time nothing (`untimed`: pip, one process at a time).
    unit) run_part "$number" "$label, no cluster (2 processes, $PRIORITY)" unit \
            "${vars[@]}" -- -m "(not cluster and not timed) or untimed" -n 2 \
            -p no:cacheprovider ;;
    # The cluster tests time processes and faults, the `timed` tests real waits: one
    # at a time, at normal priority.
    cluster) echo "[tests] ===== $number. $label ====="
             run_part "$number" "$label, cluster and timed" cluster "${vars[@]}" -- \
               -m "(cluster and not untimed) or timed" ;;
  esac
}

if [ "$#" -gt 0 ]; then  # the caller picks the tests: one pytest run per line, as asked
  for number in $LINES_TO_RUN; do run "$number" "" "$@"; done
else
  for number in $LINES_TO_RUN; do  # nothing of an earlier run is merged into this one
    rm -f "$LOGS/line$number"{,-unit,-cluster}{.xml,.log,-slowest.txt}
  done
  : > "$LOGS/.unit-summaries"
  echo "[tests] the no-cluster parts run in the background at $PRIORITY;" \
       "their logs follow the cluster parts"
  ( for number in $LINES_TO_RUN; do run "$number" unit; done
    exit "$status" ) &
  units=$!
  # Should this script end early (an error, Ctrl-C, a TERM once the running pytest has
  # returned), the background parts end with it if still running (not a pid reused
  # since); a kill of the whole process group ends the background's shell, and the
  # part running then with it (setpriv --pdeathsig, above).
  trap 'if jobs -pr | grep -qx "$units"; then stop_tree "$units"; fi' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  for number in $LINES_TO_RUN; do run "$number" cluster; done
  wait "$units" || status=1  # a background part failed, or was killed
  trap - EXIT
  for number in $LINES_TO_RUN; do
    echo "[tests] ===== $number. ${LABEL[$number]}, no cluster (its log) ====="
    cat "$LOGS/line$number-unit.log" 2>/dev/null || echo "(no log: the part did not run)"
    merge_line "$number" "${VENV[$number]}"
  done
  mapfile -t unit_lines < "$LOGS/.unit-summaries"
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
