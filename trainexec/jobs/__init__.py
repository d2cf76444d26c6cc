"""Job specs: one description of a job's shape, its TFJob and Vertex AI forms, TFJob manifests.

`JobShape` (roles, counts, command, environment, restart policy) is what
`trainexec launch` runs, what `trainexec render` renders and what `trainexec
launch --from FILE.yaml` reads from a Kubeflow TFJob. The renderers are pure
functions from it to plain data; YAML is read and written only in `yaml_text`
(PyYAML, the `k8s` extra), so `import trainexec` never loads it.

Its modules:

* `shape`: JobShape and Role: the one description of a job;
* `naming`: the names Kubernetes and the operator accept and look for;
* `policies`: cleanPodPolicy / successPolicy: chosen for a shape, and what they
  decide for a local run;
* `tf_config`: the TF_CONFIG the training operator writes for each pod;
* `tfjob`: a shape as a TFJob (plain data);
* `network_policy`: the NetworkPolicy beside it: the TF port open only to the job's
  pods;
* `vertex`: a shape as a Vertex AI CustomJob (plain data);
* `site_options`: what a site adds to the pods: volumes, GPUs, a service account,
  annotations (TFJob), accelerators, NFS mounts, a service account (Vertex AI);
* `sbatch`: a shape as a Slurm batch script (`trainexec render sbatch`);
* `render`: `trainexec render`: its flags into a shape, and the printed texts;
* `manifest_rules`: the rules a TFJob manifest must keep, each problem at its field;
* `manifest`: a TFJob manifest file read into a shape, for `launch --from`;
* `yaml_text`: YAML in and out (the one module that imports PyYAML).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainexec.lazy_exports import lazy_exports

if TYPE_CHECKING:  # what the names below are, for type checkers and editors
    from trainexec.jobs.manifest import Manifest, read_manifest
    from trainexec.jobs.network_policy import render_network_policy
    from trainexec.jobs.policies import RunPolicies
    from trainexec.jobs.shape import JobShape, Role
    from trainexec.jobs.tfjob import render_tfjob
    from trainexec.jobs.vertex import render_vertex

__all__ = ["JobShape", "Manifest", "Role", "RunPolicies", "read_manifest",
           "render_network_policy", "render_tfjob", "render_vertex"]

_EXPORTS = {
    "JobShape": "trainexec.jobs.shape",
    "Manifest": "trainexec.jobs.manifest",
    "Role": "trainexec.jobs.shape",
    "RunPolicies": "trainexec.jobs.policies",
    "read_manifest": "trainexec.jobs.manifest",
    "render_network_policy": "trainexec.jobs.network_policy",
    "render_tfjob": "trainexec.jobs.tfjob",
    "render_vertex": "trainexec.jobs.vertex",
}


if not TYPE_CHECKING:  # checkers see the imports above: a misspelt name is an error there
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
