"""tests/sigterm_teardown.py: a pytest run stopped with SIGTERM (a CI timeout, `kill`)
tears its fixtures down and says it was interrupted; a child the test forked still
ends by the signal itself."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

from processes import ROOT, child_env, sigterm_once_ready

pytestmark = [pytest.mark.cluster, pytest.mark.any_line]

RUN = textwrap.dedent("""
    import sys
    import pytest
    import sigterm_teardown
    sigterm_teardown.install()
    sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", sys.argv[1]]))
""")

TESTS = textwrap.dedent("""
    import os, pathlib, signal, time
    import pytest

    OUT = pathlib.Path(__file__).parent

    @pytest.fixture(scope="session")
    def bed():
        yield
        (OUT / "torn-down").write_text("yes")

    def test_waits_for_the_signal(bed):
        ready, tell = os.pipe()
        child = os.fork()
        if child == 0:
            os.write(tell, b"x")
            time.sleep(60)
            os._exit(0)
        os.read(ready, 1)  # the child runs (a signal before its fork ended is lost)
        os.kill(child, signal.SIGTERM)
        _, status = os.waitpid(child, 0)
        (OUT / "child").write_text(str(os.WTERMSIG(status) if os.WIFSIGNALED(status)
                                       else "exit %d" % os.waitstatus_to_exitcode(status)))
        (OUT / "started").write_text("yes")
        time.sleep(60)
""")


def test_a_sigterm_ends_the_run_after_its_fixtures_are_torn_down(tmp_path):
    (tmp_path / "test_bed.py").write_text(TESTS)
    run = subprocess.Popen([sys.executable, "-c", RUN, str(tmp_path / "test_bed.py")],
                           cwd=tmp_path, env=child_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    output = sigterm_once_ready(run, tmp_path / "started", "the test never started",
                                end_secs=30)
    assert run.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "SIGTERM" in output and "1 passed" not in output, output
    assert (tmp_path / "torn-down").read_text() == "yes", output
    # The forked child got the default action back, as exec would have given it.
    assert (tmp_path / "child").read_text() == str(signal.SIGTERM.value)


def test_a_handler_someone_installed_stays(tmp_path):
    program = textwrap.dedent("""
        import signal, sigterm_teardown
        mine = lambda signum, frame: None
        signal.signal(signal.SIGTERM, mine)
        sigterm_teardown.install()
        assert signal.getsignal(signal.SIGTERM) is mine
        print("kept")
    """)
    done = subprocess.run([sys.executable, "-c", program], cwd=ROOT, env=child_env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "kept", done.stderr
