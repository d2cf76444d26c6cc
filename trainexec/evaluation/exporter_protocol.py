"""The exporter protocol's former home: it is `trainexec.exporter_protocol` now.

`trainexec.specs` checks exporter lists, so the protocol sits below the evaluation engine,
as a root module. This module re-exports its names for the modules of `trainexec.keras`
that still import them from here; it goes once they import `trainexec.exporter_protocol`.
"""

from trainexec.exporter_protocol import (ExporterProtocol, NotAnExporterError,
                                         check_exporter_name, is_exporter, validate_exporters)

__all__ = ["ExporterProtocol", "NotAnExporterError", "check_exporter_name", "is_exporter",
           "validate_exporters"]
