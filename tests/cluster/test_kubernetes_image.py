"""The Kubernetes guide's Dockerfile, read from the page, checked and run as far as this
machine allows (no container engine here): its base is TensorFlow's official image of
the line this environment runs; its steps run in an emulated image, a directory standing
for the image's root with a venv whose site-packages are this environment's (TensorFlow
preinstalled, as in the base image): COPY copies from a build context laid out as the
guide says (a checkout of trainexec beside the README's train.py), RUN's pip install
runs as written, and CMD trains the program to its max_steps in the model_dir it names."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shlex
import shutil
import site
import subprocess
import sys
import venv

import pytest

from doc_commands import dockerfiles, program_text

# untimed: nothing here is timed (generous timeouts only): runs beside the cluster tests
pytestmark = [pytest.mark.cluster, pytest.mark.any_line, pytest.mark.untimed]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
[(PAGE, DOCKERFILE)] = dockerfiles()


def _instructions(text):
    """(INSTRUCTION, arguments) per line, continuation lines joined, comments left out."""
    found, current = [], ""
    for line in text.splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        current += line[:-1] + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            word, _, rest = current.strip().partition(" ")
            found.append((word.upper(), rest.strip()))
            current = ""
    return found


def test_the_base_is_tensorflows_official_image_of_this_line():
    [(base, image)] = [(i, a) for i, a in _instructions(DOCKERFILE) if i == "FROM"]
    name, _, tag = image.partition(":")
    assert name == "tensorflow/tensorflow"
    here = importlib.metadata.version("tensorflow")
    assert tag.split("-")[0].split(".")[:2] == here.split(".")[:2], (tag, here)


def test_its_steps_run_in_an_emulated_image(tmp_path):
    context, root = tmp_path / "context", tmp_path / "image"
    # The build context as the guide lays it out: a checkout of trainexec, train.py.
    # (Not what the suite writes while it runs: its reports and pytest's cache.)
    shutil.copytree(ROOT, context / "trainexec", ignore=shutil.ignore_patterns(
        ".venv*", "site", ".git", "__pycache__", "*.egg-info", "build", ".mypy_cache",
        ".pytest_cache", "test-reports"))
    (context / "train.py").write_text(program_text("train.py"))
    env_dir = tmp_path / "python"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    # The base image's TensorFlow: this environment's packages, seen from the new venv.
    [new_site] = (env_dir / "lib").glob("python*/site-packages")
    (new_site / "base_image.pth").write_text(
        "\n".join(p for p in site.getsitepackages() if os.path.isdir(p)) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV",
                                                              "TF_CONFIG")}
    env["PATH"] = str(env_dir / "bin") + os.pathsep + env["PATH"]

    def in_image(path):  # an absolute path of the image, under the emulated root
        return str(root) + path if path.startswith("/") else path

    def mapped(text):
        for directory in sorted(seen, key=len, reverse=True):
            text = text.replace(directory, in_image(directory))
        return text

    seen, workdir, ran, cmd = {"/runs"}, "/", [], None
    for instruction, args in _instructions(DOCKERFILE):
        if instruction == "COPY":
            source, target = shlex.split(args)
            target = target if target.startswith("/") else os.path.join(workdir, target)
            if target.endswith("/") or target.endswith("."):
                target = os.path.join(target, os.path.basename(source))
            seen.add(os.path.normpath(target))
            destination = in_image(os.path.normpath(target))
            os.makedirs(os.path.dirname(destination), exist_ok=True)
            (shutil.copytree if (context / source).is_dir() else shutil.copy)(
                context / source, destination)
        elif instruction == "WORKDIR":
            workdir = args
            seen.add(workdir)
            os.makedirs(in_image(workdir), exist_ok=True)
        elif instruction == "RUN":
            done = subprocess.run(["bash", "-c", mapped(args)], cwd=in_image(workdir),
                                  env=env, capture_output=True, text=True, timeout=900)
            assert done.returncode == 0, f"RUN {args}\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
            ran.append(args)
        elif instruction == "CMD":
            cmd = json.loads(args)
    assert ran and cmd, DOCKERFILE
    # What pip installed is trainexec, in the image's environment, from the image's copy.
    where = subprocess.run(["python", "-c", "import trainexec, yaml; print(trainexec.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert where.returncode == 0, where.stderr
    assert where.stdout.startswith(str(env_dir)), where.stdout
    assert shutil.which("trainexec", path=env["PATH"]).startswith(str(env_dir))
    # CMD: the program trains (no TF_CONFIG: one process) into the model_dir it names.
    done = subprocess.run([mapped(word) for word in cmd], cwd=in_image(workdir), env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    from trainexec import read_training_complete

    model_dir = mapped(cmd[cmd.index("--model-dir") + 1])
    complete = read_training_complete(model_dir)
    assert complete is not None and complete.global_step == 300, done.stdout[-2000:]
