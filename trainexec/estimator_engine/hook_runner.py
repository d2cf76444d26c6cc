"""Running one step in a plain session with `SessionRunHook`s, as a MonitoredSession
would: each hook's `before_run` fetches and feeds merged into one `session.run`,
then each hook's `after_run` with its own results.

Used where one session serves many runs (a persistent evaluation graph), so that no
MonitoredSession, and no new session, is needed per checkpoint.

Example:
    ```python
    stop = run_with_hooks(session, update_ops, hooks)   # True: a hook asked to stop
    ```
"""

from __future__ import annotations

from typing import Any, Sequence

import tensorflow as tf

__all__ = ["run_with_hooks"]


def run_with_hooks(session: Any, fetches: Any, hooks: Sequence[Any]) -> bool:
    """Runs `fetches` once with `hooks`; True when one asked to stop."""
    if not hooks:
        session.run(fetches)
        return False
    train = tf.compat.v1.train
    context = train.SessionRunContext(train.SessionRunArgs(fetches), session)
    hook_fetches: dict[int, Any] = {}
    feeds: dict[Any, Any] = {}
    options = tf.compat.v1.RunOptions()
    for index, hook in enumerate(hooks):
        args = hook.before_run(context)
        if args is None:
            continue
        hook_fetches[index] = args.fetches
        for tensor in args.feed_dict or {}:
            if tensor in feeds:
                raise RuntimeError(f"two hooks feed the same tensor {tensor}")
        feeds.update(args.feed_dict or {})
        if args.options:
            options.MergeFrom(args.options)
    metadata = tf.compat.v1.RunMetadata()
    outputs = session.run({"fetches": fetches, "hooks": hook_fetches},
                          feed_dict=feeds or None, options=options, run_metadata=metadata)
    for index, hook in enumerate(hooks):
        hook.after_run(context, train.SessionRunValues(
            results=outputs["hooks"].get(index), options=options, run_metadata=metadata))
    return context.stop_requested
