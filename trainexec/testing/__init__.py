"""What users reuse to test their own jobs the way trainexec is tested.

* `netns`: `TestBed`, separate hosts on one machine (network namespaces on a
  private bridge, each with its own address and `/etc/hosts`; root only);
* `kubelet`: `TFJobRun`, a TFJob's pods on those hosts, with the TF_CONFIG
  Kubeflow's operator writes and its restart and success policies applied,
  and faults to inject (kill, SIGTERM, freeze, partition).

`trainexec.launch.LocalCluster` runs a cluster on 127.0.0.1 without root.
"""
