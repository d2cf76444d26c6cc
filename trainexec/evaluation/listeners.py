"""Listeners of the continuous evaluation: hooks around each evaluation.

`ContinuousEvalListener` is the base with no-op hooks (return False to stop;
its docstring has an example); `ListenerList` fans each call out to several.
"""

from __future__ import annotations

from typing import Iterable

from trainexec.evaluation.one_pass import EvalResult

__all__ = ["ContinuousEvalListener", "ListenerList"]


class ContinuousEvalListener:
    """Hooks around each evaluation; return False to stop evaluating.

    Subclass and override what you need:

    ```python
    class StopAfterThree(ContinuousEvalListener):
        def __init__(self):
            self.count = 0
        def after_eval(self, eval_result):
            self.count += 1
            return self.count < 3
    ```
    """

    def before_eval(self) -> bool:
        """Called before each evaluation; False skips it and stops the loop."""
        return True

    def after_eval(self, eval_result: EvalResult) -> bool:
        """Called with each `EvalResult`; False stops the loop."""
        del eval_result
        return True

    def on_skip(self, checkpoint_path: str) -> None:
        """Called when a checkpoint cannot be loaded and is skipped for good."""
        del checkpoint_path


class ListenerList(ContinuousEvalListener):
    """Fans each call out to several listeners; any False stops the loop."""

    def __init__(self, listeners: Iterable[ContinuousEvalListener | None]) -> None:
        self.listeners = [listener for listener in listeners if listener is not None]
        for listener in self.listeners:
            if not isinstance(listener, ContinuousEvalListener):
                raise TypeError(
                    "`continuous_eval_listener` must be a trainexec."
                    f"ContinuousEvalListener, got {type(listener).__name__}")

    def before_eval(self) -> bool:
        return all([listener.before_eval() for listener in self.listeners])

    def after_eval(self, eval_result: EvalResult) -> bool:
        return all([listener.after_eval(eval_result) for listener in self.listeners])

    def on_skip(self, checkpoint_path: str) -> None:
        for listener in self.listeners:
            listener.on_skip(checkpoint_path)
