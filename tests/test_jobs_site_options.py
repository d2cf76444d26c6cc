"""trainexec/jobs/site_options.py on its own: the `trainexec render` site flags parsed into
the values the TFJob and Vertex AI renderers put in the pods (volumes and their names,
annotations, accelerators, NFS mounts), and each refusal a ConfigError naming the flag,
the value and the fix, beyond the ones tests/test_jobs_render.py makes through the CLI."""

import pytest

from trainexec.errors import ConfigError
from trainexec.jobs.site_options import (NfsMount, Volume, check_gpus,
                                         check_k8s_service_account,
                                         check_vertex_service_account, parse_accelerator,
                                         parse_annotations, parse_nfs_mounts, parse_volumes)

pytestmark = pytest.mark.any_line


def test_volumes_mount_at_their_path_without_a_trailing_slash_each_named_once():
    volumes = parse_volumes(["shared-runs:/runs/", "datasets:/data/imagenet",
                             "shared-runs:/cache", "team.data:/team"])
    assert volumes == (Volume("shared-runs", "/runs", "shared-runs"),
                       Volume("datasets", "/data/imagenet", "datasets"),
                       # the same claim again, and a claim that is no label (a '.'),
                       # get the name of their place among the flags
                       Volume("shared-runs", "/cache", "volume-2"),
                       Volume("team.data", "/team", "volume-3"))
    assert parse_volumes([]) == ()


def test_a_claim_too_long_for_a_volume_name_still_mounts_under_a_numbered_name():
    claim = "a" * 64  # a valid claim (a DNS subdomain), but over a label's 63 characters
    assert parse_volumes([f"{claim}:/runs"]) == (Volume(claim, "/runs", "volume-0"),)
    with pytest.raises(ConfigError, match="is not a PersistentVolumeClaim name"):
        parse_volumes([f"{'a' * 254}:/runs"])


@pytest.mark.parametrize("value, words", [
    ("runs:/data/../etc", "--volume 'runs:/data/../etc': the mount path '/data/../etc' "
     "must be absolute, without ':' or '..', e.g. --volume shared-runs:/runs"),
    (":/runs", "--volume ':/runs' is not CLAIM:/MOUNT/PATH"),
    ("-runs:/runs", "'-runs' is not a PersistentVolumeClaim name"),
    ("runs://", "--volume 'runs://': a volume cannot be mounted at /"),
])
def test_a_bad_volume_is_refused_naming_the_flag_and_the_fix(value, words):
    with pytest.raises(ConfigError) as refused:
        parse_volumes([value])
    assert words in str(refused.value)


def test_annotations_keep_the_flags_order_and_a_repeated_key_its_last_value():
    pairs = parse_annotations(["sidecar.istio.io/inject=false", "team=ml",
                               "note=a=b", "empty=", "sidecar.istio.io/inject=true"])
    assert pairs == (("sidecar.istio.io/inject", "true"), ("team", "ml"), ("note", "a=b"),
                     ("empty", ""))


@pytest.mark.parametrize("value", ["Example.com/inject=1", "a/b/c=1", "example.com/=1",
                                   f"{'k' * 64}=1", "-team=ml", "team_=ml"])
def test_an_annotation_key_kubernetes_would_refuse_is_refused(value):
    with pytest.raises(ConfigError) as refused:
        parse_annotations([value])
    key = value.partition("=")[0]
    assert f"--annotation {value!r}: {key!r} is not an annotation key" in str(refused.value)


def test_gpus_and_a_kubernetes_service_account():
    for fine in (0, 1, 8):
        check_gpus(fine)  # raises nothing
    for bad in (True, 1.5, "2"):
        with pytest.raises(ConfigError, match=f"--gpus {bad} is not a GPU count"):
            check_gpus(bad)
    check_k8s_service_account(None)
    check_k8s_service_account("training-runner.ml")
    with pytest.raises(ConfigError, match="e.g. --service-account training-runner"):
        check_k8s_service_account("training-runner.")


def test_an_accelerator_is_its_type_and_count_or_none_without_the_flag():
    assert parse_accelerator(None) == (None, 0)
    assert parse_accelerator("NVIDIA_TESLA_A100:8") == ("NVIDIA_TESLA_A100", 8)
    assert parse_accelerator("TPU_V3:2") == ("TPU_V3", 2)
    for bad in ("NVIDIA_TESLA_T4:-1", ":1", "NVIDIA_TESLA_T4:1:2", "1GPU:1"):
        with pytest.raises(ConfigError, match=f"--accelerator '{bad}' is not TYPE:COUNT"):
            parse_accelerator(bad)


@pytest.mark.parametrize("email, fine", [
    (None, True), ("trainer@my-project.iam.gserviceaccount.com", True),
    ("123-compute@developer.gserviceaccount.com", True), ("@p.iam.gserviceaccount.com", False),
    ("trainer@localhost", False), ("a@b@c.com", False), ("trainer @p.iam.com", False)])
def test_a_vertex_service_account_is_an_email(email, fine):
    if fine:
        check_vertex_service_account(email)
        return
    with pytest.raises(ConfigError) as refused:
        check_vertex_service_account(email)
    assert (f"--service-account {email!r} is not a service account's email"
            in str(refused.value))


def test_nfs_shares_are_seen_under_mnt_nfs_by_their_name():
    mounts = parse_nfs_mounts(["10.0.0.2:/vol1:runs", "filer.internal:/exports/a:b:data_2"])
    assert mounts == (NfsMount("10.0.0.2", "/vol1", "runs"),
                      # the share's own path may hold a ':'; the name is after the last
                      NfsMount("filer.internal", "/exports/a:b", "data_2"))
    assert [m.local_path for m in mounts] == ["/mnt/nfs/runs", "/mnt/nfs/data_2"]


@pytest.mark.parametrize("value, words", [
    (":/vol1:runs", "--nfs ':/vol1:runs' is not SERVER:/PATH:NAME"),
    ("10.0.0.2:/vol1:", "--nfs '10.0.0.2:/vol1:' is not SERVER:/PATH:NAME"),
    ("10.0.0.2:/vol1:..", "'..' is not a directory name"),
    ("10.0.0.2:/vol1:-runs", "'-runs' is not a directory name"),
])
def test_a_bad_nfs_share_is_refused_naming_the_flag_and_the_fix(value, words):
    with pytest.raises(ConfigError) as refused:
        parse_nfs_mounts([value])
    assert words in str(refused.value)
    assert "e.g. --nfs 10.0.0.2:/vol1:runs (seen at /mnt/nfs/runs)" in str(refused.value)


def test_a_generated_volume_name_never_repeats_a_claim_named_like_one():
    volumes = parse_volumes(["volume-1:/a", "data.v1:/b"])
    assert [v.name for v in volumes] == ["volume-1", "volume-2"]


def test_a_count_in_other_digits_is_refused_naming_the_flag():
    with pytest.raises(ConfigError, match="--accelerator 'NVIDIA_TESLA_T4:\u00b2' is not TYPE:COUNT"):
        parse_accelerator("NVIDIA_TESLA_T4:\u00b2")
