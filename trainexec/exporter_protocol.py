"""What an exporter is to the evaluation engine, and the checks every exporter gets.

An exporter is anything with a `name` and an `export(estimator, export_path,
checkpoint_path, eval_result, is_the_final_export)` method (`ExporterProtocol`):
`tf.estimator`'s exporters, `trainexec.keras.evaluate.exporters`' and users' own all
qualify. After an evaluation, `trainexec.evaluation.one_pass.Evaluator` calls
each exporter's `export` with `export_path = <model_dir>/export/<name>`.

This module owns the two checks every exporter list gets, wherever it is given
(`EvalSpec(exporters=...)`, `SidecarEvaluator(exporters=...)`, an exporter's own
constructor):

* `check_exporter_name`: the name can be one directory under `export/`;
* `validate_exporters`: a list of exporters, each with a good, unique name.

Example:
    ```python
    exporters = validate_exporters([LatestExporter(), FinalExporter()])
    check_exporter_name("best")        # "best"
    check_exporter_name("../best")     # ConfigError: ... contains a path separator
    ```
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol

from trainexec.errors import ConfigError

__all__ = [
    "ExporterProtocol",
    "NotAnExporterError",
    "check_exporter_name",
    "is_exporter",
    "validate_exporters",
]


class ExporterProtocol(Protocol):
    """What the evaluation engine calls after an evaluation.

    `export` returns what it exported (usually the export directory), or None
    when it declined (a final-only exporter before the final evaluation).
    """

    @property
    def name(self) -> str:  # read-only here: an attribute or a property qualifies
        ...

    def export(self, estimator: Any, export_path: str, checkpoint_path: str,
               eval_result: Mapping[str, Any], is_the_final_export: bool) -> Any:
        ...


class NotAnExporterError(ConfigError, TypeError):
    """`exporters` holds something that is not an exporter.

    Both a `ConfigError` (what `SidecarEvaluator` raises for bad arguments) and
    a `TypeError` (what `tf.estimator.EvalSpec` raises for it).
    """


def is_exporter(obj: Any) -> bool:
    """Whether `obj` has a `name` and a callable `export` (see `ExporterProtocol`)."""
    return hasattr(obj, "name") and callable(getattr(obj, "export", None))


def check_exporter_name(name: Any) -> str:
    """Returns `name` if it can name an export directory; raises ConfigError if not.

    An exporter's name becomes one directory, `<model_dir>/export/<name>`: it
    must be a non-empty string that is a single directory name, not "." or
    "..", without "/", "\\", NUL or other control characters, and without
    surrounding spaces. ConfigError is a ValueError, as tf.estimator raises.
    """
    fix = "e.g. 'best' or 'final_v2' (it names the directory <model_dir>/export/<name>)"
    if name is None or (isinstance(name, str) and not name):
        raise ConfigError(
            "An Exporter cannot have a name that is `None` or empty: exporter `name` "
            f"({name!r}) must be a non-empty string, {fix}")
    if not isinstance(name, str):
        raise ConfigError(
            f"An Exporter must have a string name: exporter `name` ({name!r}) is of type "
            f"{type(name).__name__}; use a string, {fix}")
    if name in (".", ".."):
        problem = ("is '.', the export directory itself" if name == "." else
                   "is '..', the parent of the export directory")
    elif "/" in name or "\\" in name:
        problem = "contains a path separator"
    elif "\x00" in name:
        problem = "contains a NUL character"
    elif any(ord(c) < 32 or ord(c) == 127 for c in name):
        problem = "contains a control character"
    elif name != name.strip():
        problem = "has surrounding spaces"
    else:
        return name
    raise ConfigError(
        f"exporter `name` ({name!r}) must be a single directory name (without '/', "
        f"'\\', NUL or control characters, not '.' or '..', no surrounding spaces), but "
        f"it {problem}; {fix}")


def validate_exporters(exporters: Any) -> tuple:
    """Returns `exporters` as a tuple of uniquely, safely named exporters.

    `exporters` is an exporter, an iterable of them, or None / empty (no
    exporters). Checked in this order: every item is an exporter
    (`NotAnExporterError`, a ConfigError and a TypeError), then each name in
    turn is a good directory name (`check_exporter_name`, ConfigError) and not
    a repeat of an earlier one (ConfigError). ConfigError is a ValueError, as
    tf.estimator raises for names.
    """
    if not exporters:
        return ()
    if is_exporter(exporters):
        exporters = [exporters]
    given = exporters
    try:
        exporters = list(exporters)
    except TypeError:
        raise NotAnExporterError(_not_an_exporter(given, given)) from None
    for exporter in exporters:
        if not is_exporter(exporter):
            raise NotAnExporterError(_not_an_exporter(exporters, exporter))
    names = [e.name for e in exporters]
    seen: set = set()
    for name in names:
        check_exporter_name(name)
        if name in seen:
            raise ConfigError(
                "`exporters` must have unique names. Such a name cannot be `None`. "
                f"All exporter names: {names}; exporter names must be unique: each "
                "names a directory <model_dir>/export/<name>")
        seen.add(name)
    return tuple(exporters)


def _not_an_exporter(exporters: Any, item: Any) -> str:
    what = ("it is neither an exporter nor an iterable" if item is exporters
            else f"{item!r} is not an exporter")
    return ("`exporters` must be an Exporter, an iterable of Exporter, or `None`, "
            f"found {exporters!r}: {what}; an exporter needs a "
            "non-empty string `name` and an export(estimator, export_path, "
            "checkpoint_path, eval_result, is_the_final_export) method (see "
            "trainexec.exporters)")
