#!/usr/bin/env bash
# The main job: a real local cluster (chief, 2 workers, 1 ps, evaluator) training a
# small Estimator on embedded data through `trainexec launch`, ending with the task
# summary, the final evaluation metrics and the export path.
# Estimators need the TensorFlow 2.15 line (created in .venv-tf2.15 if missing).
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
VENV="$(trainexec_env tf2.15)"
export PATH="$VENV/bin:$PATH"
cd "$ROOT"
export TF_CPP_MIN_LOG_LEVEL=3  # hide TensorFlow's C++ start-up chatter (no GPU here)
MODEL_DIR="${MODEL_DIR:-$ROOT/runs/demo-$(date +%Y%m%d-%H%M%S)}"
MAX_STEPS="${MAX_STEPS:-1500}"
echo "[demo] model_dir: $MODEL_DIR"
status=0
# Every task ends by itself: Estimator workers at max_steps, trainexec's ps once
# they all have. Wait for each of them rather than stopping any.
trainexec launch --workers 2 --ps 1 --evaluator --timeout 900 \
  --wait-for chief --wait-for worker --wait-for ps --wait-for evaluator -- \
  python -m trainexec.examples.estimator_job --model-dir "$MODEL_DIR" \
  --max-steps "$MAX_STEPS" --throttle-secs 5 --worker-delay-secs 2 \
  --result-file "$MODEL_DIR/final_result.json" "$@" || status=$?
if [ "$status" -eq 0 ]; then
  python - "$MODEL_DIR/final_result.json" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
metrics = result["metrics"]
print("[demo] final evaluation: " + ", ".join(
    f"{k}={v:.4g}" for k, v in sorted(metrics.items())))
for path in result["exports"]:
    print(f"[demo] exported model: {path}")
PY
fi
exit "$status"
