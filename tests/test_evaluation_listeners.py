"""trainexec/evaluation/listeners.py: a listener that overrides nothing never stops the
evaluations; `ListenerList` calls every listener, in order, even after one has said
stop, stops when any says so, skips None and refuses what is not a listener, naming
its type. A listener stopping the loop itself: tests/test_evaluation_loop.py::
test_listener_before_eval_stops."""

import pytest

from trainexec.evaluation.listeners import ContinuousEvalListener, ListenerList
from trainexec.evaluation.one_pass import EvalResult, EvalStatus

pytestmark = pytest.mark.any_line

EVALUATED = EvalResult(EvalStatus.EVALUATED, {"loss": 0.5, "global_step": 20},
                       "/model/ckpt-20")


class Recorder(ContinuousEvalListener):
    """Records its calls in `calls` (shared between listeners) and answers `answer`."""

    def __init__(self, name, calls, answer=True):
        self.name, self.calls, self.answer = name, calls, answer

    def before_eval(self):
        self.calls.append((self.name, "before_eval"))
        return self.answer

    def after_eval(self, eval_result):
        self.calls.append((self.name, "after_eval", eval_result.global_step))
        return self.answer

    def on_skip(self, checkpoint_path):
        self.calls.append((self.name, "on_skip", checkpoint_path))


def test_a_listener_that_overrides_nothing_never_stops_the_evaluations():
    listener = ContinuousEvalListener()
    assert listener.before_eval() is True
    assert listener.after_eval(EVALUATED) is True
    assert listener.after_eval(EvalResult(EvalStatus.NO_NEW_CHECKPOINT)) is True
    assert listener.on_skip("/model/ckpt-10") is None


def test_every_listener_is_called_in_order_even_after_one_said_stop():
    calls = []
    listeners = ListenerList([Recorder("first", calls, answer=False),
                              Recorder("second", calls)])
    assert listeners.before_eval() is False
    assert listeners.after_eval(EVALUATED) is False
    listeners.on_skip("/model/ckpt-10")
    assert calls == [("first", "before_eval"), ("second", "before_eval"),
                     ("first", "after_eval", 20), ("second", "after_eval", 20),
                     ("first", "on_skip", "/model/ckpt-10"),
                     ("second", "on_skip", "/model/ckpt-10")]


@pytest.mark.parametrize("answers, goes_on", [
    ((True, True), True), ((True, False), False), ((False, True), False),
    ((True, None), False),  # an override that forgot to return: read as stop, as the loop does
])
def test_the_list_goes_on_only_when_every_listener_says_so(answers, goes_on):
    listeners = ListenerList([Recorder(i, [], answer) for i, answer in enumerate(answers)])
    assert listeners.before_eval() is goes_on
    assert listeners.after_eval(EVALUATED) is goes_on


def test_none_entries_are_left_out_and_an_empty_list_goes_on():
    calls = []
    only = Recorder("only", calls)
    listeners = ListenerList([None, only, None])
    assert listeners.listeners == [only]
    assert listeners.after_eval(EVALUATED) is True and calls == [("only", "after_eval", 20)]
    nothing = ListenerList([None])
    assert nothing.listeners == []
    assert nothing.before_eval() is True and nothing.after_eval(EVALUATED) is True


def test_lists_nest_and_take_any_iterable():
    calls = []
    inner = ListenerList(Recorder(name, calls) for name in ("a", "b"))  # a generator
    outer = ListenerList([inner, Recorder("c", calls, answer=False)])
    assert outer.after_eval(EVALUATED) is False
    assert [call[0] for call in calls] == ["a", "b", "c"]


@pytest.mark.parametrize("wrong, named", [
    (lambda result: True, "function"), ({"after_eval": None}, "dict"),
    (ContinuousEvalListener, "type"),  # the class itself, not an instance
])
def test_what_is_not_a_listener_is_refused_naming_its_type(wrong, named):
    with pytest.raises(TypeError) as err:
        ListenerList([ContinuousEvalListener(), wrong])
    assert str(err.value) == ("`continuous_eval_listener` must be a trainexec."
                              f"ContinuousEvalListener, got {named}")
