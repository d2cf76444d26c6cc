"""Which GPUs each task of a local cluster sees: its own, through CUDA_VISIBLE_DEVICES.

Every TensorFlow process takes (nearly) all the memory of every GPU it sees. Four tasks
of a cluster on one machine would all see every GPU, and the first to start would
starve the others; TensorFlow's own multi-worker tutorial hides GPUs for this reason.
So the launcher decides, before anything starts (`assign`, pure):

* the GPUs to share out are those the launcher sees: its CUDA_VISIBLE_DEVICES when
  set (`""` or `-1`: none), else the machine's (`/dev/nvidia0`, `/dev/nvidia1`, ...);
  with none, nothing is set and nothing said;
* the training tasks (chief, master, workers) get them in turn: `per_task` each
  (`--gpus-per-task N`), or by default an equal share, at least one (2 GPUs and a
  chief and a worker: one each; 4 GPUs: two each). When there are fewer GPUs than
  that, tasks share them round-robin, and TF_FORCE_GPU_ALLOW_GROWTH=true (unless set)
  lets the sharers take memory as they need it instead of all at once;
* the ps and the evaluator see none (`CUDA_VISIBLE_DEVICES=""`: a ps holds variables,
  an evaluator evaluates at leisure), unless `jobs` names them (`--gpus-to
  chief,worker,evaluator`);
* `per_task=0` sets nothing: every task sees every GPU, as without the launcher.

The launcher logs one line saying what it did (`GPUs: chief:0 GPU 0, worker:0 GPU 1;
evaluator:0 none`), and `--dry-run` shows each task's CUDA_VISIBLE_DEVICES. A role's
own environment (a manifest replica's `env`) wins over it; a CUDA_VISIBLE_DEVICES in
`LocalCluster(env=...)` is, like the launcher's own, the GPUs to share out.

Example:
    ```python
    plan = assign([("chief", 0), ("worker", 0), ("evaluator", 0)], ["0", "1"])
    plan.env["worker:0"]     # {"CUDA_VISIBLE_DEVICES": "1"}
    plan.env["evaluator:0"]  # {"CUDA_VISIBLE_DEVICES": ""}
    plan.describe()          # "GPUs: chief:0 GPU 0, worker:0 GPU 1; evaluator:0 none ..."
    ```
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Callable, Mapping, Sequence

from trainexec.errors import ConfigError
from trainexec.task_types import CHIEF, EVALUATOR, MASTER, PS, WORKER

__all__ = ["ALLOW_GROWTH", "TRAINING_JOBS", "VISIBLE", "GpuPlan", "assign", "gpus_here",
           "parse_jobs"]

VISIBLE = "CUDA_VISIBLE_DEVICES"
ALLOW_GROWTH = "TF_FORCE_GPU_ALLOW_GROWTH"
TRAINING_JOBS = (CHIEF, MASTER, WORKER)
_JOBS = (CHIEF, MASTER, WORKER, PS, EVALUATOR)
_DEVICE = re.compile(r"^nvidia(\d+)$")


def _devices() -> list[str]:
    try:
        names = os.listdir("/dev")
    except OSError:
        return []
    return sorted((m.group(1) for m in map(_DEVICE.match, names) if m), key=int)


def gpus_here(environ: Mapping[str, str] | None = None,
              devices: Callable[[], list[str]] = _devices) -> list[str]:
    """The GPUs the launcher may share out: its CUDA_VISIBLE_DEVICES (ids or UUIDs,
    comma-separated; empty or -1: none), else the machine's NVIDIA devices."""
    environ = os.environ if environ is None else environ
    if VISIBLE in environ:
        ids = [part.strip() for part in environ[VISIBLE].split(",") if part.strip()]
        # CUDA stops at the first invalid id: -1 (or anything after it) hides the rest.
        return ids[:ids.index("-1")] if "-1" in ids else ids
    return devices()


def parse_jobs(text: str | Sequence[str]) -> tuple[str, ...]:
    """`chief,worker,evaluator` (or a list) -> the job names that get GPUs;
    ConfigError naming an unknown one."""
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text)]
    unknown = [n for n in names if n not in _JOBS]
    if unknown or not names:
        raise ConfigError(f"gpus to {text!r}: give job names among {', '.join(_JOBS)}, "
                          "e.g. chief,worker,evaluator")
    return tuple(dict.fromkeys(names))


@dataclasses.dataclass(frozen=True)
class GpuPlan:
    """What each task adds to its environment for its GPUs (`env`, by task name),
    and the line saying so (`describe`); empty when there is nothing to share."""

    env: Mapping[str, Mapping[str, str]]
    given: Mapping[str, tuple[str, ...]]  # task -> its GPUs (empty: hidden)
    shared: bool = False

    def describe(self) -> str | None:
        if not self.given:
            return None
        parts, hidden = [], []
        for task, ids in self.given.items():
            if ids:
                parts.append(f"{task} GPU{'s' if len(ids) > 1 else ''} {','.join(ids)}")
            else:
                hidden.append(task)
        text = "GPUs (CUDA_VISIBLE_DEVICES): " + ", ".join(parts)
        if hidden:
            text += f"; {', '.join(hidden)} none (--gpus-to names the jobs that get some)"
        if self.shared:
            text += (f"; fewer GPUs than tasks: shared round-robin, with {ALLOW_GROWTH}=true "
                     "so each takes memory as it needs it")
        return text


def assign(tasks: Sequence[tuple[str, int]], gpus: Sequence[str], *,
           per_task: int | None = None, jobs: Sequence[str] = TRAINING_JOBS,
           environ: Mapping[str, str] | None = None) -> GpuPlan:
    """Shares `gpus` among `tasks` (type, index) as the module doc says. `environ`
    is the launcher's (is TF_FORCE_GPU_ALLOW_GROWTH set already?)."""
    if per_task is not None and (isinstance(per_task, bool) or not isinstance(per_task, int)
                                 or per_task < 0):
        raise ConfigError(f"gpus per task is {per_task!r}: give a count >= 0 (0: every task "
                          "sees every GPU)")
    environ = os.environ if environ is None else environ
    if not gpus or per_task == 0:
        return GpuPlan({}, {})
    takers = [f"{t}:{i}" for t, i in tasks if t in jobs]
    if not takers:
        return GpuPlan({}, {})
    each = per_task if per_task is not None else max(1, len(gpus) // len(takers))
    shared = each * len(takers) > len(gpus)
    given: dict[str, tuple[str, ...]] = {}
    env: dict[str, dict[str, str]] = {}
    for n, task in enumerate(takers):
        ids = tuple(gpus[(n * each + k) % len(gpus)] for k in range(min(each, len(gpus))))
        given[task] = ids
        env[task] = {VISIBLE: ",".join(ids)}
        if shared and ALLOW_GROWTH not in environ:
            env[task][ALLOW_GROWTH] = "true"
    for t, i in tasks:
        task = f"{t}:{i}"
        if task not in given:
            given[task] = ()
            env[task] = {VISIBLE: ""}
    order = [f"{t}:{i}" for t, i in tasks]
    return GpuPlan({t: env[t] for t in order}, {t: given[t] for t in order}, shared)
