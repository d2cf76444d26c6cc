"""TensorFlow's canned-estimator tutorial programs, written for tf.estimator 2.15, with
their one estimator import changed to trainexec.estimator: the premade-estimator
(`DNNClassifier`) and the linear-model (`LinearClassifier`, crossed column) tutorials
train, evaluate and predict on this line, under Keras 3 and tf_keras alike (they use no
Keras name); on the 2.15 line, as the unchanged programs do on tf.estimator."""

import pathlib
import re
import tempfile

import pytest

pytestmark = pytest.mark.tf_line

PROGRAMS = pathlib.Path(__file__).resolve().parent / "estimator_programs"
THEIRS = "from tensorflow import estimator"
OURS = "import trainexec.estimator as estimator"


def run_program(name, monkeypatch, tmp_path, capsys, ours=True):
    """What program `name` prints, run in this process (its Estimator's temporary
    model_dir under tmp_path), on trainexec.estimator or, unchanged, tf.estimator."""
    path = PROGRAMS / name
    source = path.read_text(encoding="utf-8")
    assert source.count(THEIRS) == 1
    if ours:
        source = source.replace(THEIRS, OURS)
    tmp_path.mkdir(parents=True, exist_ok=True)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    capsys.readouterr()
    exec(compile(source, str(path), "exec"), {"__name__": "__main__", "__file__": str(path)})
    return capsys.readouterr().out


def check_premade(out):
    accuracy = float(re.search(r"Test set accuracy: ([\d.]+)", out).group(1))
    predicted = re.findall(r'Prediction is "(\w+)" \([\d.]+%\), expected "(\w+)"', out)
    assert len(predicted) == 3
    return accuracy, predicted


def check_linear(out):
    found = {}
    for which in ("linear", "crossed"):
        line = re.search(rf"^{which}: (.*)$", out, flags=re.MULTILINE).group(1)
        found[which] = eval(line)  # the dict the program printed
        assert found[which]["global_step"] == 200  # 10 epochs of 627 in batches of 32
        assert set(found[which]) >= {"accuracy", "auc", "loss", "accuracy_baseline"}
    assert re.search(r"^predicted: 264 mean", out, flags=re.MULTILINE)
    return found


def test_the_premade_estimator_tutorial(monkeypatch, tmp_path, capsys, no_tf_config):
    accuracy, predicted = check_premade(run_program("premade_estimator.py", monkeypatch,
                                                    tmp_path, capsys))
    # Adagrad at Keras's default rate is still learning at step 2000: unseeded, test
    # accuracy ranged from 0.167 to 1.0 run to run (0.53 on TensorFlow's own tutorial
    # page); the program's seed gives 0.867 on both engines and both lines
    assert accuracy >= 0.4


def test_the_linear_model_tutorial(monkeypatch, tmp_path, capsys, no_tf_config):
    found = check_linear(run_program("linear_model_tutorial.py", monkeypatch, tmp_path,
                                     capsys))
    # fare and age unscaled, input shuffled: accuracy swings (0.53 to 0.67 seen), the
    # ranking less (AUC 0.68 to 0.74); a model that learnt nothing has AUC 0.5
    assert found["linear"]["auc"] > 0.6 and found["crossed"]["auc"] > 0.6


@pytest.mark.estimator
def test_the_tutorials_print_what_they_printed_on_tf_estimator(monkeypatch, tmp_path,
                                                              capsys, no_tf_config):
    ours = check_linear(run_program("linear_model_tutorial.py", monkeypatch,
                                    tmp_path / "ours", capsys))
    theirs = check_linear(run_program("linear_model_tutorial.py", monkeypatch,
                                      tmp_path / "theirs", capsys, ours=False))
    for which in ("linear", "crossed"):  # shuffled input: close, not equal
        assert ours[which]["auc"] == pytest.approx(theirs[which]["auc"], abs=0.1)
    for ours_or_theirs in (True, False):  # both run through, to 0.867 (above)
        accuracy, _ = check_premade(run_program(
            "premade_estimator.py", monkeypatch, tmp_path / f"premade-{ours_or_theirs}",
            capsys, ours=ours_or_theirs))
        assert accuracy >= 0.4
