"""A SidecarEvaluator of the toy model on CHECKPOINT_DIR with a FinalExporter, run to the
end of the run; prints its final metrics as JSON.

Usage: evaluate_dir.py CHECKPOINT_DIR
"""

import json
import logging
import sys

import toy
from trainexec import SidecarEvaluator
from trainexec.exporters import FinalExporter


def main(checkpoint_dir):
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    metrics = SidecarEvaluator(toy.build_model(), toy.dataset(), checkpoint_dir,
                               exporters=[FinalExporter()], verbose=0).start()
    print(json.dumps({k: float(v) for k, v in metrics.items()}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
