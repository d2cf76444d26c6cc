"""What users reuse to test their own jobs the way trainexec is tested.

* `netns`: `TestBed`, separate hosts on one machine (per host its own network
  namespace on a private bridge with its own address, `/etc/hosts` and aliases,
  its own hostname, pid namespace and mounts; root only);
* `bridge`: what both beds share: hosts' network namespaces on a private Linux
  bridge, made on entry and removed on exit, `link_down` / `link_up`;
* `storage`: `SharedDir`, one directory every host sees through its own FUSE
  view with NFS-like caching (`NfsCaching`; needs bindfs), and faults on demand: a
  stall, EIO/ESTALE, slow calls, a full disk;
* `faultfs`: the pass-through file system under those views that plays the faults
  (fusepy);
* `gcs`: `GcsEmulator`, a local Google Cloud Storage that TensorFlow's own
  `gs://` file system and google-cloud-storage reach from the bed's hosts (TLS
  with a CA made for the test; root), which answers chosen requests with errors,
  resets or delays, or pauses (an outage), on demand;
* `slurm`: `SlurmBed`, a real Slurm (slurmctld, and slurmd on n9, n10, n11)
  in network namespaces (Debian's packages; root);
* `kubelet`: `TFJobRun`, a TFJob's pods on those hosts, with the TF_CONFIG
  Kubeflow's operator writes and its restart and success policies applied,
  and faults to inject (kill, SIGTERM, freeze, partition);
* `tfjob_spec`: `TFJobSpec` and `Replicas`, the job `TFJobRun` runs, and the
  operator's pure decisions (each pod's TF_CONFIG, a container's exit code);
* `chaos`: seeded, replayable mixes of those faults on a TFJob (`Schedule`,
  `run_schedule`), the invariants checked after each run, and a CLI
  (`python -m trainexec.testing.chaos --seeds 1-20`).

`trainexec.launch.LocalCluster` runs a cluster on 127.0.0.1 without root.
"""
