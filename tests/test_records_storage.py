"""What storage holds model_dir, and how late another host's writes may show there
(trainexec.records.storage), and the evaluator's waits that follow from it."""

from __future__ import annotations

import pytest

from trainexec.errors import ConfigError
from trainexec.evaluation.policy import LoopPolicy
from trainexec.records.storage import (LOCAL, NETWORK, NETWORK_VISIBILITY_SECS, OBJECT,
                               VISIBILITY_VARIABLE, check_supported, storage_of)

pytestmark = pytest.mark.tf_line

MOUNTS = """\
22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
30 22 0:50 / /mnt/nfs rw,relatime - nfs4 filer:/export rw,vers=4.2
31 22 0:51 / /mnt/nfs/inner rw - tmpfs tmpfs rw
32 22 0:52 / /gcs rw - fuse.gcsfuse bucket rw
33 22 0:53 / /mnt/view rw - fuse bindfs rw
"""


@pytest.mark.parametrize("path, kind, file_system, late", [
    ("/home/me/run", LOCAL, "ext4", 0.0),
    ("/mnt/nfs/run1", NETWORK, "nfs4", NETWORK_VISIBILITY_SECS),
    ("/mnt/nfs/inner/run", LOCAL, "tmpfs", 0.0),  # the longest mount point wins
    ("/mnt/nfsother/run", LOCAL, "ext4", 0.0),   # a prefix of a name is not a parent
    ("/gcs/bucket/run", NETWORK, "fuse.gcsfuse", NETWORK_VISIBILITY_SECS),
    ("/mnt/view/run", NETWORK, "fuse", NETWORK_VISIBILITY_SECS),
    ("gs://bucket/run", OBJECT, "gs", 5.0),  # TensorFlow's GCS stat cache
    ("ram://run", OBJECT, "ram", 0.0),
])
def test_storage_kind_and_how_late_other_hosts_writes_show(path, kind, file_system, late):
    where = storage_of(path, environ={}, mountinfo=MOUNTS)
    assert (where.kind, where.file_system, where.visibility_secs) == (kind, file_system, late)
    assert where.inotify_sees_other_hosts == (kind == LOCAL)


def test_the_network_bound_follows_the_mount_options_given():
    where = storage_of("/mnt/nfs/run", environ={VISIBILITY_VARIABLE: "3"}, mountinfo=MOUNTS)
    assert where.visibility_secs == 3.0
    with pytest.raises(ConfigError, match=f"{VISIBILITY_VARIABLE}='soon' must be a number"):
        storage_of("/mnt/nfs/run", environ={VISIBILITY_VARIABLE: "soon"}, mountinfo=MOUNTS)


def test_s3_is_refused_before_anything_starts_naming_what_to_do_instead():
    import tensorflow as tf

    if "s3" in tf.io.gfile.get_registered_schemes():
        pytest.skip(f"TensorFlow {tf.__version__} has an s3:// file system")
    with pytest.raises(ConfigError, match=r"model_dir 's3://bucket/run'.* no file system for "
                       r"s3://.*mount the bucket"):
        check_supported("s3://bucket/run")
    check_supported("gs://bucket/run")  # TensorFlow's own
    check_supported("/local/run")


def test_waits_for_another_hosts_record_grow_by_the_storage_delay():
    nfs = storage_of("/mnt/nfs/run", environ={}, mountinfo=MOUNTS)
    policy = LoopPolicy.for_storage(nfs, poll_secs=1.0)
    assert policy.completion_wait_secs == 30.0 + NETWORK_VISIBILITY_SECS
    assert policy.stale_record_grace_secs == 30.0 + NETWORK_VISIBILITY_SECS
    # 0 keeps meaning "none" (the SidecarEvaluator trusts every record at once).
    assert LoopPolicy.for_storage(nfs, stale_record_grace_secs=0).stale_record_grace_secs == 0
    local = storage_of("/home/me/run", environ={}, mountinfo=MOUNTS)
    assert LoopPolicy.for_storage(local, completion_wait_secs=5).completion_wait_secs == 5
