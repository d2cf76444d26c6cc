"""Exporters that rename their own exports into place, made whole on object storage.

tf.estimator's exporters (`LatestExporter`, `BestExporter`, `FinalExporter`)
write each export to `<export_path>/temp-<timestamp>` and rename it to
`<export_path>/<timestamp>`. On a file system that rename is atomic; on
object storage (`gs://`) it is a copy and a delete per object in name order,
so `saved_model.pb` lands before `variables/` and a loader polling the
directory (TF Serving) can load half an export, and an evaluator killed
meanwhile leaves one for good.

There, `export_staged` hands the exporter a staging directory inside its
export directory (`.tmp-...`, which no loader takes for a version and
`ExportFileManager.remove_interrupted` removes once its writer is gone),
publishes what it wrote with `ExportFileManager`'s rule (every file first,
`saved_model.pb` last), removes numbered exports a killed publication left
without it, and lets the exporter collect its old exports in the real
directory (`_garbage_collect_exports`, a private method of tf.estimator's
exporters, called when it exists: without it old exports are kept). That call stays
here, not on the Estimator side, because this engine imports no trainer; the attribute
is inventoried (and checked by a test) in `trainexec.estimator_trainer.compat.exporters`.
trainexec's own exporters publish whole exports themselves (`publishes_whole_exports =
True`) and are called directly.

Example:

```python
result = export_staged(exporter, estimator=est, export_path="gs://b/m/export/latest",
                       checkpoint_path=ckpt, eval_result=metrics, is_the_final_export=False)
```
"""

from __future__ import annotations

import logging
import os
import uuid
from typing import Any

from trainexec.evaluation.export_files import ExportFileManager, is_whole, publish
from trainexec.records.liveness import Owner

__all__ = ["export_staged", "needs_staging"]

logger = logging.getLogger(__name__)


def needs_staging(exporter: Any, export_path: str) -> bool:
    """Whether `exporter` must be staged to give whole exports at `export_path`."""
    return "://" in export_path and not getattr(exporter, "publishes_whole_exports", False)


def export_staged(exporter: Any, *, estimator: Any, export_path: str, checkpoint_path: str,
                  eval_result: Any, is_the_final_export: bool) -> Any:
    """`exporter.export(...)` through a staging directory (see the module doc)."""
    import tensorflow as tf

    files = ExportFileManager(export_path)
    files.remove_interrupted()
    files.remove_partial()
    stage = f"{export_path.rstrip('/')}/.tmp-0-{uuid.uuid4().hex}-{Owner.current().tag()}"
    try:
        result = exporter.export(estimator=estimator, export_path=stage,
                                 checkpoint_path=checkpoint_path, eval_result=eval_result,
                                 is_the_final_export=is_the_final_export)
        if result is None:
            return None
        written = result.decode() if isinstance(result, bytes) else str(result)
        final = f"{export_path.rstrip('/')}/{os.path.basename(written.rstrip('/'))}"
        if not (tf.io.gfile.exists(final) and is_whole(final)):
            publish(written, final)
            logger.info("Exporter %s published %s whole (staged in %s)",
                        getattr(exporter, "name", exporter), final, stage)
        collect = getattr(exporter, "_garbage_collect_exports", None)
        if callable(collect):
            collect(export_path)
        return final.encode() if isinstance(result, bytes) else final
    finally:
        if tf.io.gfile.exists(stage):
            tf.io.gfile.rmtree(stage)
