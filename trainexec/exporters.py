"""The documented import path of the exporters: `from trainexec.exporters import ...`.

Re-exports the Keras SavedModel exporters (`trainexec.keras.evaluate.exporters`), the
export file manager (`trainexec.evaluation.export_files`) and the exporter name
check (`trainexec.exporter_protocol`), the names this path has always had.

Example:
    ```python
    from trainexec.exporters import BestExporter, FinalExporter, LatestExporter
    ```
"""

from trainexec.evaluation.export_files import ExportFileManager
from trainexec.exporter_protocol import check_exporter_name
from trainexec.keras.evaluate.exporters import (BEST_FILE, BestExporter, BestValue, Exporter,
                                                FinalExporter, LatestExporter)

__all__ = [
    "BEST_FILE",
    "BestExporter",
    "BestValue",
    "ExportFileManager",
    "Exporter",
    "FinalExporter",
    "LatestExporter",
    "check_exporter_name",
]
