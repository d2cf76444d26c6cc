"""How a trainexec task's exit code tells its launcher what happened.

`PREEMPTED_EXIT_CODE` (75, EX_TEMPFAIL in sysexits.h: "temporary failure, try
again") means "preempted: I saved a checkpoint, restart me".

Example::

    raise SystemExit(PREEMPTED_EXIT_CODE)
"""

__all__ = ["PREEMPTED_EXIT_CODE"]

PREEMPTED_EXIT_CODE = 75
