"""SidecarEvaluators on gs://, for tests/cluster/test_storage_gcs.py (runs on a bed host).

  sidecar_rounds.py prepare GS_DIR ROUNDS
      writes ROUNDS finished Keras runs (two checkpoints of the toy model and the
      completion record) to GS_DIR/<round>
  sidecar_rounds.py evaluate GS_DIR ROUNDS CONTROL_DIR NAME [--kill-on-copy N]
      for each round: waits for CONTROL_DIR/go-<round>.json ({"start_at": t}), sleeps
      until t, runs a SidecarEvaluator with a FinalExporter on GS_DIR/<round>, and
      writes CONTROL_DIR/<NAME>-<round>.json: "evaluated" (with the loss and the
      start time), "found done" (it held the lease only after the other evaluator had
      finished, and stopped at once with its recorded metrics) or "refused"
      (EvaluatorAlreadyRunning). --kill-on-copy N: SIGKILLs
      this process at its Nth copy into an export directory (mid-publication).
  sidecar_rounds.py inspect GS_DIR ROUNDS
      prints, per round, the numbered directories under export/final (whole or
      not), the exports trainexec counts, and anything else there
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def prepare(gs_dir: str, rounds: int) -> None:
    import tensorflow as tf

    from finished_runs import finished_keras_run
    from trainexec.records.completion import record_training_complete

    with tempfile.TemporaryDirectory() as local:
        finished_keras_run(local, 0.5, 0.9)
        names = sorted(n for n in os.listdir(local) if n.endswith(".weights.h5"))
        for r in range(rounds):
            target = f"{gs_dir}/{r}"
            tf.io.gfile.makedirs(target)
            for name in names:
                tf.io.gfile.copy(os.path.join(local, name), f"{target}/{name}", overwrite=True)
            record_training_complete(target, f"{target}/{names[-1]}", 16, None)


def evaluate(gs_dir: str, rounds: int, control: str, name: str, kill_on_copy: int) -> None:
    import logging

    import tensorflow as tf

    logging.basicConfig(level=logging.INFO, format=f"[{name}] %(asctime)s %(name)s: "
                        "%(message)s")

    from sidecar_programs import toy
    from trainexec import SidecarEvaluator
    from trainexec.evaluation.lease import EvaluatorAlreadyRunning
    from trainexec.exporters import FinalExporter

    if kill_on_copy:
        # Every TensorFlow copy goes through this binding, whoever calls it.
        from tensorflow.python.lib.io import _pywrap_file_io

        real_copy, copies = _pywrap_file_io.CopyFile, []

        def copy(src, dst, *args):
            if b"/export/" in (dst if isinstance(dst, bytes) else dst.encode()):
                copies.append(dst)
                if len(copies) == kill_on_copy:
                    print(json.dumps({"killed_at_copy": str(dst)}), flush=True)
                    os.kill(os.getpid(), signal.SIGKILL)
            return real_copy(src, dst, *args)
        _pywrap_file_io.CopyFile = copy
    for r in range(rounds):
        go = os.path.join(control, f"go-{r}.json")
        while not os.path.exists(go):
            time.sleep(0.01)
        start_at = json.load(open(go))["start_at"]
        model = toy.build_model()
        time.sleep(max(0.0, start_at - time.time()))
        started = time.time()
        evaluator = SidecarEvaluator(model, toy.dataset(), f"{gs_dir}/{r}",
                                     exporters=[FinalExporter()], verbose=0)
        try:
            metrics = evaluator.start()
            # 0 evaluations: it got the lease after the other had evaluated, exported and
            # released it, and stopped at once with the recorded metrics.
            outcome = {"outcome": "evaluated" if evaluator.evaluations else "found done",
                       "evaluations": evaluator.evaluations, "loss": float(metrics["loss"])}
        except EvaluatorAlreadyRunning as err:
            outcome = {"outcome": "refused", "why": str(err)}
        outcome["started"] = started
        with open(os.path.join(control, f"{name}-{r}.json"), "w") as f:
            json.dump(outcome, f)


def inspect(gs_dir: str, rounds: int) -> None:
    import tensorflow as tf

    from trainexec.evaluation.export_files import ExportFileManager, is_whole

    report = {}
    for r in range(rounds):
        files = ExportFileManager(f"{gs_dir}/{r}/export/final")
        names = sorted(n.rstrip("/") for n in tf.io.gfile.listdir(files.base_dir)) \
            if tf.io.gfile.isdir(files.base_dir) else []
        report[r] = {
            "numbered": {n: is_whole(f"{files.base_dir}/{n}") for n in names if n.isdigit()},
            "exports": [e.rsplit("/", 1)[-1] for e in files.exports()],
            "other": [n for n in names if not n.isdigit()]}
    print(json.dumps(report))


def main(argv: list[str]) -> int:
    mode, gs_dir, rounds = argv[0], argv[1], int(argv[2])
    if mode == "prepare":
        prepare(gs_dir, rounds)
    elif mode == "evaluate":
        kill = int(argv[argv.index("--kill-on-copy") + 1]) if "--kill-on-copy" in argv else 0
        evaluate(gs_dir, rounds, argv[3], argv[4], kill)
    else:
        inspect(gs_dir, rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
