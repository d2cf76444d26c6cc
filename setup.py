"""Packaging for trainexec, a TF_CONFIG-aware distributed task runner for TensorFlow.

Installed from a checkout (no release yet); two TensorFlow lines are supported and tested:

* ``pip install .``: current TensorFlow (2.16 up to 2.21), where ``tf.keras`` is
  Keras 3. ``pip install ".[tf-keras]"`` adds tf_keras (Keras 2, selected with
  ``TF_USE_LEGACY_KERAS=1``).
* ``pip install ".[estimator]"``: TensorFlow 2.15 with tensorflow-estimator 2.15
  and Keras 2.15, the last line with Estimators.

``pip install ".[k8s]"`` adds PyYAML, for ``trainexec render`` and
``trainexec launch --from FILE.yaml`` (Kubeflow TFJob manifests).

pyproject.toml declares the build system (a setuptools that writes
``License-Expression``); the metadata is here. No project URL is given: none is
true yet (the docs travel in the wheel instead, for ``trainexec docs``).
"""

import pathlib
import re

from setuptools import find_packages, setup


def package_version() -> str:
    """`__version__` from trainexec/__init__.py, read as text (importing the package
    would need its dependencies installed first): the one place the version is set."""
    init = pathlib.Path(__file__).resolve().parent / "trainexec" / "__init__.py"
    match = re.search(r'^__version__ = "([^"]+)"', init.read_text(encoding="utf-8"), re.M)
    if match is None:
        raise RuntimeError(f'{init}: no line __version__ = "X.Y.Z"')
    return match.group(1)


HERE = pathlib.Path(__file__).resolve().parent


def doc_pages() -> list[tuple[str, list[str]]]:
    """The documentation's Markdown pages, for `trainexec docs` after a wheel install:
    installed under <prefix>/share/doc/trainexec/ as they are laid out in docs/ (the
    API pages, which MkDocs fills from docstrings, and the generated ones stay out)."""
    docs = HERE / "docs"
    found: dict[str, list[str]] = {}
    for page in sorted(docs.rglob("*.md")):
        name = page.relative_to(docs).as_posix()
        if name.startswith("reference/api/") or name in ("changelog.md", "reference/cli.md"):
            continue
        folder = page.parent.relative_to(docs).as_posix()
        target = "share/doc/trainexec" + ("" if folder == "." else f"/{folder}")
        found.setdefault(target, []).append(page.relative_to(HERE).as_posix())
    return sorted(found.items())


setup(
    name="trainexec",
    version=package_version(),
    description="Run TensorFlow training as a cluster: TF_CONFIG roles, "
    "continuous evaluation and a local cluster launcher.",
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    author="The trainexec authors",
    license_expression="Apache-2.0",
    license_files=["LICENSE"],
    keywords=["tensorflow", "distributed training", "TF_CONFIG", "estimator", "keras",
              "kubeflow", "slurm"],
    classifiers=[
        "Development Status :: 4 - Beta",
        "Intended Audience :: Developers",
        "Intended Audience :: Science/Research",
        "Operating System :: POSIX :: Linux",
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3 :: Only",
        "Programming Language :: Python :: 3.10",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.12",
        "Programming Language :: Python :: 3.13",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
        "Topic :: System :: Distributed Computing",
        "Typing :: Typed",
    ],
    packages=find_packages(include=["trainexec", "trainexec.*"]),
    # py.typed: type checkers read trainexec's own annotations (PEP 561).
    package_data={"trainexec": ["py.typed"]},
    # The guides as Markdown: `trainexec docs` lists and prints them (trainexec.cli.docs).
    data_files=doc_pages(),
    # TensorFlow 2.21 has wheels for 3.10 to 3.13; the `estimator` extra (TensorFlow
    # 2.15) for 3.9 to 3.11 only.
    python_requires=">=3.10",
    install_requires=[
        # pip picks the newest in range (2.21 today); 2.15 is allowed so that
        # the `estimator` extra can pin it.
        "tensorflow>=2.15,<2.22",
        # TF 2.21 no longer installs TensorBoard; Keras' TensorBoard callback needs it.
        "tensorboard>=2.15",
        "portpicker>=1.5",
    ],
    extras_require={
        # TensorFlow 2.15 has no wheels for Python 3.12 and later.
        "estimator": ["tensorflow==2.15.*", "tensorflow-estimator==2.15.*"],
        # Keras 2 on current TensorFlow (TF_USE_LEGACY_KERAS=1); pip matches its
        # version to TensorFlow's.
        "tf-keras": ["tf-keras>=2.16"],
        # `trainexec render` and `trainexec launch --from FILE.yaml` write and read
        # Kubernetes manifests with PyYAML; nothing else needs it.
        "k8s": ["pyyaml>=5.4"],
        # An evaluator lease on gs:// is created and renewed under generation
        # preconditions, which TensorFlow's gs:// file system cannot send.
        "gcs": ["google-cloud-storage>=2.10"],
        # jsonschema checks rendered TFJobs against ../shared/k8s/tfjob.schema.json;
        # the tests render and read manifests too.
        # The gs:// tests run TensorFlow's own GCS file system and the lease's
        # google-cloud-storage client against a local emulator
        # (trainexec.testing.gcs relies on the emulator's internals: pinned), over
        # TLS with a CA the test makes (cryptography).
        # mypy checks the public API's types as a user's checker sees them
        # (tests/test_typing.py): it asserts mypy's messages, worded as in mypy 2.
        # pandas: trainexec.estimator.inputs.pandas_input_fn is tested on real
        # DataFrames; trainexec itself never needs it (imported when that is called).
        "test": ["pytest>=7", "psutil>=5.9", "jsonschema>=4.0", "pyyaml>=5.4",
                 "google-cloud-storage>=2.10", "gcp-storage-emulator>=2026.7.19,<2027",
                 "cryptography>=41", "mypy>=2.4,<3", "pandas>=1.5",
                 # trainexec.testing.faultfs: the NFS-like views' faults (FUSE, libfuse2)
                 "fusepy>=3.0",
                 # scripts/test.sh runs the tests that start no cluster on both cores
                 # (they are CPU-bound and independent); the cluster tests run alone.
                 "pytest-xdist>=3.5"],
    },
    entry_points={"console_scripts": ["trainexec=trainexec.cli:main"]},
)
