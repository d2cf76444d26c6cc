"""The variables a Slurm batch script exports to every task of its step.

`trainexec render sbatch` (`trainexec.jobs.sbatch`) writes them into the script; each
task reads them: `ROLES_ENV` builds its cluster from the step (`trainexec.cluster.slurm`),
`MODEL_DIR_ENV` says where `trainexec slurm-exec` (`trainexec.launch.slurm_exec`) records
the task's verdict (`trainexec.contract.slurm_outcome`).

Example:
    ```python
    environ[ROLES_ENV] = "chief=1,worker=2"            # ranks in this role order
    environ[MODEL_DIR_ENV] = "/shared/demo"
    ```
"""

__all__ = ["MODEL_DIR_ENV", "ROLES_ENV"]

ROLES_ENV = "TRAINEXEC_SLURM_ROLES"
MODEL_DIR_ENV = "TRAINEXEC_SLURM_MODEL_DIR"
