"""A package's public names, imported on first use (PEP 562 module `__getattr__`).

Keeps `import trainexec` (and the `trainexec` command) fast: TensorFlow and the
launcher's dependencies load only when a name that needs them is used.

Example (in a package's `__init__.py`):

```python
_EXPORTS = {"LocalCluster": "trainexec.launch.cluster"}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
```
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Callable, Mapping, MutableMapping

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str],
                 namespace: MutableMapping[str, Any]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`: `exports` maps each public name
    to the module defining it; a name is imported once, then cached in `namespace`.

    A name that is none of them but one of the package's modules
    (`trainexec.exporters` after `import trainexec`) is imported too, as Python
    would after `import trainexec.exporters`; any other name is an AttributeError."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            if not name.startswith("_") and _is_submodule(f"{package}.{name}"):
                value = importlib.import_module(f"{package}.{name}")
                namespace[name] = value
                return value
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(namespace.get("__all__", exports))

    return __getattr__, __dir__


def _is_submodule(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
