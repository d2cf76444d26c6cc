"""Packaging for trainexec, a TF_CONFIG-aware distributed task runner for TensorFlow."""

from setuptools import find_packages, setup

setup(
    name="trainexec",
    version="0.1.0",
    description="Run TensorFlow training as a cluster: TF_CONFIG roles, "
    "continuous evaluation and a local cluster launcher.",
    packages=find_packages(include=["trainexec", "trainexec.*"]),
    python_requires=">=3.10",
    install_requires=[
        "tensorflow==2.15.*",
        "tensorflow-estimator==2.15.*",
        "portpicker>=1.5",
    ],
    extras_require={"test": ["pytest>=7"]},
    entry_points={"console_scripts": ["trainexec=trainexec.cli:main"]},
)
