"""Estimator support on both TensorFlow lines: where tf.estimator is missing
(TensorFlow 2.16 and later) trainexec says how to get it, and the `estimator` /
`keras` markers skip, fail or deselect as tests/conftest.py promises.

Which line this is comes from tests/tf_lines.py, a check of its own, so the
product's `trainexec.estimator_trainer.availability.tf_estimator` is held against it."""

import os
import subprocess
import sys
import textwrap
import types

import pytest

import suite_frame
import tf_lines
import trainexec
from trainexec.estimator_trainer.availability import check_trainable, tf_estimator

pytestmark = pytest.mark.tf_line

FIX = 'pip install "trainexec[estimator]"'


def needs_a_line_without_estimator():
    if tf_lines.has_estimator():
        pytest.skip("this TensorFlow has tf.estimator; "
                    "test_tf_estimator_returns_the_module covers it")


def test_tf_estimator_names_the_fix_where_there_is_none():
    needs_a_line_without_estimator()
    import tensorflow as tf
    with pytest.raises(trainexec.ConfigError) as caught:
        tf_estimator()
    message = str(caught.value)
    assert FIX in message
    assert "TensorFlow 2.15 with tensorflow-estimator" in message
    assert f"TensorFlow {tf.__version__}" in message  # the installed version


@pytest.mark.estimator
def test_tf_estimator_returns_the_module():
    import tensorflow as tf
    module = tf_estimator()
    assert module is tf.estimator
    # The loaded module itself, not TensorFlow 2.15's lazy loader in front of it.
    assert type(module) is types.ModuleType
    assert module.__name__.startswith("tensorflow_estimator."), module.__name__
    assert issubclass(module.DNNClassifier, module.Estimator)
    assert callable(module.train_and_evaluate)


def test_check_trainable_names_the_fix_only_where_estimator_is_missing():
    with pytest.raises(TypeError) as caught:
        check_trainable(object())
    message = str(caught.value)
    assert message.startswith("`estimator` must be a tf.estimator.Estimator or another "
                              "model with config, model_dir, train, evaluate, "
                              "latest_checkpoint; object lacks config, model_dir")
    assert (FIX in message) == (not tf_lines.has_estimator()), message


def test_check_trainable_accepts_a_model_without_looking_for_estimator():
    class Model:
        config = model_dir = None

        def train(self): ...

        def evaluate(self): ...

        def latest_checkpoint(self): ...

    assert check_trainable(Model()) is None


def test_estimator_job_imports_and_its_builders_name_the_fix(tmp_path):
    from trainexec.examples import estimator_job  # no tf.estimator needed to import
    assert estimator_job.local_training_steps(
        ["[worker:1] role worker done in 8.1s after 120 local training steps"],
        "worker:1") == 120
    assert estimator_job.make_data(5, seed=0)[0].shape == (5, estimator_job.FEATURES)
    assert estimator_job.StepCounter().steps == 0
    needs_a_line_without_estimator()
    # Its tf.estimator engine (the native one runs here: tests/test_estimator_engine_*).
    for build in (lambda: estimator_job.make_estimator(str(tmp_path), engine="tf"),
                  lambda: estimator_job.build_specs(10, engine="tf")):
        with pytest.raises(trainexec.ConfigError, match=r'trainexec\[estimator\]'):
            build()


def test_estimator_job_program_exits_naming_the_fix(tmp_path):
    needs_a_line_without_estimator()
    model_dir = tmp_path / "model"
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    done = subprocess.run(
        [sys.executable, "-m", "trainexec.examples.estimator_job", "--engine", "tf",
         "--model-dir", str(model_dir)],
        capture_output=True, text=True, timeout=120, cwd=str(tmp_path), env=env)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert FIX in done.stderr, done.stderr[-2000:]
    assert "Estimators need TensorFlow 2.15 with tensorflow-estimator" in done.stderr
    assert "trainexec.estimator" in done.stderr  # the way on without 2.15
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert not model_dir.exists()  # it failed before doing anything


# The markers, in a pytest run of their own on a sample test file with this
# suite's conftest.py, tf_lines.py and pytest.ini.
SAMPLE = textwrap.dedent("""
    import pytest

    @pytest.mark.estimator
    def test_needs_estimator():
        import tensorflow as tf
        assert tf.estimator.EstimatorSpec

    @pytest.mark.keras
    def test_keras():
        pass

    def test_plain():
        pass
    """)


def run_sample(tmp_path, **flags):
    tests = suite_frame.copy_to(tmp_path)
    (tests / "test_sample.py").write_text(SAMPLE)
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRAINEXEC_REQUIRE_ESTIMATOR", "TRAINEXEC_KERAS_TESTS_ONLY",
                        "TRAINEXEC_TF_LINE_TESTS_ONLY")}
    env.update(flags)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA",
                           "--durations=0"], capture_output=True, text=True, timeout=300,
                          cwd=str(tmp_path), env=env)
    return done.returncode, done.stdout + done.stderr


def closing_line(output):
    return [line for line in output.splitlines() if line.startswith("=")][-1]


def test_estimator_marker_skips_naming_the_fix_or_runs(tmp_path):
    code, output = run_sample(tmp_path)
    if tf_lines.has_estimator():
        assert code == 0 and "3 passed" in closing_line(output), output
        assert "skipped" not in closing_line(output), output
    else:
        assert code == 0, output
        assert "2 passed, 1 skipped" in closing_line(output), output
        (skip,) = [line for line in output.splitlines() if line.startswith("SKIPPED")]
        assert "test_sample.py" in skip and "needs tf.estimator" in skip, skip
        assert FIX in skip and "TensorFlow 2.15 with tensorflow-estimator" in skip, skip


def test_required_estimator_fails_instead_of_skipping(tmp_path):
    code, output = run_sample(tmp_path, TRAINEXEC_REQUIRE_ESTIMATOR="1")
    if tf_lines.has_estimator():
        assert code == 0 and "3 passed" in closing_line(output), output
    else:
        assert code == 1, output
        assert "1 failed, 2 passed" in closing_line(output), output
        assert "skipped" not in closing_line(output), output
        (failed,) = [line for line in output.splitlines() if line.startswith("FAILED")]
        assert "test_sample.py::test_needs_estimator" in failed, failed
        assert "TRAINEXEC_REQUIRE_ESTIMATOR=1 but" in output and FIX in output, output


def test_keras_tests_only_deselects_the_others(tmp_path):
    code, output = run_sample(tmp_path, TRAINEXEC_KERAS_TESTS_ONLY="1")
    assert code == 0, output
    assert "1 passed, 2 deselected" in closing_line(output), output
    assert "PASSED tests/test_sample.py::test_keras" in output, output
    assert "skipped" not in closing_line(output), output
