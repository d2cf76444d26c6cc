"""trainexec/contract/task_logging.py: a task with no logging configured shows
trainexec's INFO lines on stderr, and only trainexec's, each once; a level or a handler
the user gave the `trainexec` logger is kept; the launcher's variable read from the
environment drops the prefix. Prefixing, updating the handler and a user's root
handler: tests/test_keras_trainer.py::
test_task_logging_prefixes_lines_and_respects_a_users_configuration."""

import logging

import pytest

from trainexec.contract.task_logging import LAUNCHED_TASK_ENV, configure_task_logging

pytestmark = pytest.mark.any_line


@pytest.fixture
def unconfigured(monkeypatch):
    """The `trainexec` logger as in a process that configured no logging; its handlers,
    propagation and level are restored afterwards."""
    package = logging.getLogger("trainexec")
    monkeypatch.setattr(package, "handlers", [])
    monkeypatch.setattr(package, "propagate", True)
    monkeypatch.delenv(LAUNCHED_TASK_ENV, raising=False)
    level = package.level
    package.setLevel(logging.NOTSET)
    yield package
    package.setLevel(level)


def no_root_handlers(monkeypatch):
    """Sets pytest's own root handlers aside (added as each test starts, after fixtures)."""
    monkeypatch.setattr(logging.getLogger(), "handlers", [])


class Collect(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(self.format(record))


def test_only_trainexecs_lines_from_info_up_are_shown(unconfigured, monkeypatch, capsys):
    no_root_handlers(monkeypatch)
    assert configure_task_logging("chief:0")
    assert unconfigured.level == logging.INFO
    logging.getLogger("trainexec.tasks.roles").debug("not shown")
    logging.getLogger("trainexec.tasks.roles").warning("waiting for %s", "ps:0")
    logging.getLogger("tensorflow").warning("another library's line")
    logging.getLogger("trainexecutor").warning("a name that only starts the same")
    # (Python's last-resort handler still prints the others' warnings, unprefixed.)
    assert [line for line in capsys.readouterr().err.splitlines() if "[chief:0]" in line] == [
        "[chief:0] WARNING trainexec.tasks.roles: waiting for ps:0"]


def test_a_root_handler_added_later_does_not_print_each_line_twice(unconfigured, monkeypatch,
                                                                      capsys):
    no_root_handlers(monkeypatch)
    assert configure_task_logging("worker:0")
    # What a library's first logging.info() does: basicConfig puts a handler on root.
    logging.basicConfig(format="ROOT %(message)s")
    try:
        logging.getLogger("trainexec.evaluation.loop").info("evaluated ckpt-5")
        assert capsys.readouterr().err == (
            "[worker:0] INFO trainexec.evaluation.loop: evaluated ckpt-5\n")
        # And a later call keeps trainexec's handler: it is ours, not the user's.
        assert configure_task_logging("worker:1")
        assert len(unconfigured.handlers) == 1
    finally:
        logging.getLogger().handlers.clear()


def test_a_level_the_user_set_on_the_trainexec_logger_is_kept(unconfigured, monkeypatch,
                                                              capsys):
    no_root_handlers(monkeypatch)
    unconfigured.setLevel(logging.WARNING)
    assert configure_task_logging("evaluator:0")
    assert unconfigured.level == logging.WARNING
    logging.getLogger("trainexec.x").info("hidden by the user's level")
    logging.getLogger("trainexec.x").error("shown")
    assert capsys.readouterr().err == "[evaluator:0] ERROR trainexec.x: shown\n"


def test_a_handler_the_user_put_on_the_trainexec_logger_is_left_alone(unconfigured,
                                                                       monkeypatch, capsys):
    no_root_handlers(monkeypatch)
    users = Collect()
    unconfigured.addHandler(users)
    assert not configure_task_logging("worker:3")
    assert unconfigured.handlers == [users] and unconfigured.propagate
    assert unconfigured.level == logging.NOTSET  # no INFO forced on the user
    logging.getLogger("trainexec.tasks").warning("as the user formats it")
    assert users.lines == ["as the user formats it"] and capsys.readouterr().err == ""


def test_under_trainexec_launch_the_variable_in_the_environment_drops_the_prefix(
        unconfigured, monkeypatch, capsys):
    no_root_handlers(monkeypatch)
    monkeypatch.setenv(LAUNCHED_TASK_ENV, "ps:1")
    assert configure_task_logging("ps:1")  # environ not given: os.environ is read
    logging.getLogger("trainexec.tasks.serving").info("serving")
    assert capsys.readouterr().err == "INFO trainexec.tasks.serving: serving\n"
