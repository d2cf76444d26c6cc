"""Helpers for tests that start real processes: waiting, liveness, no survivors."""

from __future__ import annotations

import contextlib
import os
import signal
import time

import psutil


def wait_until(predicate, timeout: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def assert_no_survivors(pids: set[int]) -> None:
    assert pids, "expected some started processes"
    try:
        wait_until(lambda: not any(alive(p) for p in pids), timeout=5,
                   what="every started process to be gone")
    except AssertionError:
        survivors = sorted(p for p in pids if alive(p))
        for pid in survivors:  # do not leak them into other tests
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        raise AssertionError(f"processes outlived the launcher: {survivors}") from None
