"""What this Python installation can train, read from package metadata without
importing TensorFlow (so `trainexec tfconfig` stays fast).

`trainexec tfconfig` judges a cluster by its shape (`cluster_verdicts.trainer_support`);
this adds whether the trainers can run *here*: TensorFlow 2.16 and newer have no
`tf.estimator`, and `TF_USE_LEGACY_KERAS=1` there needs tf_keras installed. (Keras 3
trains clusters too: with trainexec's own loop, `trainexec.keras.fit.distributed_fit`.)

Example:
    ```python
    Installation.detect().notes()
    # {'Estimator': 'not here: TensorFlow 2.21.0 has no tf.estimator; ...', 'Keras': '...'}
    ```
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import os
from typing import Callable, Mapping

__all__ = ["Installation"]

_TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-intel",
                             "tensorflow-macos")


def _version_of(distributions: tuple[str, ...]) -> str | None:
    for name in distributions:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _minor(version: str) -> tuple[int, int]:
    parts = (version.split(".") + ["0", "0"])[:2]
    try:
        return int(parts[0]), int(parts[1])
    except ValueError:
        return (0, 0)


@dataclasses.dataclass(frozen=True)
class Installation:
    """The installed TensorFlow version (None: not installed), whether
    tensorflow_estimator and tf_keras are installed, and whether
    TF_USE_LEGACY_KERAS selects tf_keras."""

    tensorflow: str | None
    estimator_installed: bool
    tf_keras_installed: bool
    legacy_keras_selected: bool

    @classmethod
    def detect(cls, environ: Mapping[str, str] | None = None,
               version_of: Callable[[tuple[str, ...]], str | None] = _version_of,
               installed: Callable[[str], bool] = _installed) -> "Installation":
        environ = os.environ if environ is None else environ
        return cls(tensorflow=version_of(_TENSORFLOW_DISTRIBUTIONS),
                   estimator_installed=installed("tensorflow_estimator"),
                   tf_keras_installed=installed("tf_keras"),
                   # TensorFlow's own test of the variable.
                   legacy_keras_selected=environ.get("TF_USE_LEGACY_KERAS") in
                   ("1", "true", "True"))

    def notes(self) -> dict[str, str]:
        """For each trainer that cannot train a cluster here, why and the fix."""
        if self.tensorflow is None:
            missing = "TensorFlow is not installed: pip install trainexec"
            return {"Estimator": f"not here: {missing}", "Keras": f"not here: {missing}"}
        notes = {}
        if _minor(self.tensorflow) >= (2, 16):
            notes["Estimator"] = (f"not here: TensorFlow {self.tensorflow} "
                                  "has no tf.estimator; trainexec.estimator runs "
                                  "custom model_fns and the canned estimators here "
                                  "(change the import), or pip install "
                                  '"trainexec[estimator]" (TensorFlow 2.15) in another '
                                  "environment")
        elif not self.estimator_installed:
            notes["Estimator"] = ("not here: tensorflow-estimator is not installed; "
                                  'pip install "trainexec[estimator]"')
        if (_minor(self.tensorflow) >= (2, 16) and self.legacy_keras_selected
                and not self.tf_keras_installed):
            notes["Keras"] = ("not here: TF_USE_LEGACY_KERAS=1 selects tf_keras, which is not "
                              'installed; pip install "trainexec[tf-keras]", or unset '
                              "TF_USE_LEGACY_KERAS to train with Keras 3")
        return notes
