"""The public surface: every exported name loads, without tensorflow_estimator."""

import subprocess
import sys

import trainexec


def test_public_names_resolve_without_tensorflow_estimator():
    code = ("import sys, trainexec\n"
            "assert 'tensorflow' not in sys.modules, 'import trainexec loaded TensorFlow'\n"
            "for name in trainexec.__all__: getattr(trainexec, name)\n"
            "assert 'tensorflow_estimator' not in sys.modules\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


def test_unknown_name_is_an_attribute_error():
    try:
        trainexec.NoSuchThing
    except AttributeError as err:
        assert "NoSuchThing" in str(err)
    else:
        raise AssertionError("expected AttributeError")
