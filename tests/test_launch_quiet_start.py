"""trainexec/launch/quiet_start.py: which TensorFlow C++ lines a launched task's output
hides at each TF_CPP_MIN_LOG_LEVEL, and the level the launcher gives a task. Through
LocalCluster with a real child process: tests/cluster/test_launch_quiet_start_processes.py."""

import pytest

from trainexec.launch.quiet_start import CppLogFilter, task_environment

pytestmark = pytest.mark.any_line

# As TensorFlow 2.21 and 2.15 print them at import (pids and times differ).
NOTICE = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"
ONEDNN = ("I0000 00:00:1795606781.474123   22612 port.cc:153] oneDNN custom operations are "
          "on. You may see slightly different numerical results")
CUDA = ("I0000 00:00:1795606781.480872   22612 cudart_stub.cc:31] Could not find cuda "
        "drivers on your machine, GPU will not be used.")
CUINIT = ("E0000 00:00:1795606789.044922   22612 cuda_platform.cc:52] failed call to cuInit: "
          "INTERNAL: CUDA error")
TRT = ("2026-11-25 11:40:08.498424: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] "
       "TF-TRT Warning: Could not find TensorRT")
OLD_INFO = ("2026-11-25 11:40:08.498424: I tensorflow/core/platform/cpu_feature_guard.cc:182] "
            "This TensorFlow binary is optimized")
USER = ["I0000 is how my program greets", "step 100/600: loss = 0.3", "INFO trainexec.x: hi",
        "E0000 00:00 not a log line]"]


@pytest.mark.parametrize("level, hidden", [
    ("0", []),
    ("1", [NOTICE, ONEDNN, CUDA, OLD_INFO]),
    ("2", [NOTICE, ONEDNN, CUDA, TRT, OLD_INFO]),
    ("3", [NOTICE, ONEDNN, CUDA, CUINIT, TRT, OLD_INFO]),
    ("verbose", []),  # not a number: TensorFlow ignores it, so do we
])
def test_hides_tensorflow_cpp_lines_below_the_level(level, hidden):
    hide = CppLogFilter.for_level(level)
    lines = [NOTICE, ONEDNN, CUDA, CUINIT, TRT, OLD_INFO, *USER]
    assert [line for line in lines if hide(line)] == hidden


def test_the_level_defaults_to_1_unless_set():
    assert task_environment({"A": "b"}) == {"A": "b", "TF_CPP_MIN_LOG_LEVEL": "1"}
    assert task_environment({"TF_CPP_MIN_LOG_LEVEL": "0"})["TF_CPP_MIN_LOG_LEVEL"] == "0"
