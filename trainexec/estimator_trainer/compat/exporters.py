"""tf.estimator exporters' private garbage collection, called by the staged export.

| attribute | seen on | when it is missing |
| --- | --- | --- |
| `tensorflow_estimator.python.estimator.exporter.LatestExporter._garbage_collect_exports` | 2.15 | on object storage (`gs://`), a staged export keeps every old export (`exports_to_keep` is not applied); on a file system nothing changes (the exporter collects its own) |
| `tensorflow_estimator.python.estimator.exporter.BestExporter._garbage_collect_exports` | 2.15 | the same |

The call itself stays in `trainexec.evaluation.staged_export.export_staged`
(`getattr(exporter, "_garbage_collect_exports", None)`, called when it exists): the
evaluation engine may import neither trainer (tests/test_layers.py) and is handed the
exporter objects directly (it cannot be handed a callable from here either: the
exporter is the user's, called by the engine), so this module only inventories the
attribute, with `used_in` naming the call, for the inventory test.
"""

from __future__ import annotations

from trainexec.internals import LINE_TF_2_15, Internal

__all__ = ["INTERNALS"]

_WHERE = "trainexec/evaluation/staged_export.py (export_staged)"
_KEEPS_ALL = "a staged export (gs://) keeps every old export: exports_to_keep is not applied"

INTERNALS = tuple(
    Internal(owner=f"tensorflow_estimator.python.estimator.exporter.{name}",
             attribute="_garbage_collect_exports", lines=(LINE_TF_2_15,),
             when_missing=_KEEPS_ALL, used_in=_WHERE)
    for name in ("LatestExporter", "BestExporter"))

