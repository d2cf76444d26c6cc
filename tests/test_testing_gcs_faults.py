"""trainexec/testing/gcs/faults.py: which kind each request of TensorFlow's and
google-cloud-storage's clients is, what a plan applies to and until when, and the plan
file the emulator reads again when it changes (the emulator playing them on real
clients: tests/cluster/test_testing_gcs.py)."""

import json
import os

import pytest

from trainexec.testing.gcs.faults import FaultFile, FaultPlan, request_kind

pytestmark = pytest.mark.any_line


@pytest.mark.parametrize("method, path, query, kind", [
    ("GET", "/trainexec-test/model/checkpoint", {}, "read"),  # storage.googleapis.com
    ("GET", "/storage/v1/b/b/o/model%2Fcheckpoint", {"alt": ["media"]}, "read"),
    ("GET", "/download/storage/v1/b/b/o/x", {"alt": ["media"]}, "read"),
    ("GET", "/storage/v1/b/b/o/model%2Fcheckpoint", {"fields": ["size"]}, "metadata"),
    ("GET", "/storage/v1/b/b", {}, "metadata"),
    ("GET", "/storage/v1/b/b/o", {"prefix": ["model/"]}, "list"),
    ("POST", "/upload/storage/v1/b/b/o", {"uploadType": ["resumable"], "name": ["x"]},
     "upload"),
    ("PUT", "/upload/storage/v1/b/b/o", {"upload_id": ["abc"]}, "upload"),
    ("POST", "/storage/v1/b/b/o/a/rewriteTo/b/b/o/c", {}, "upload"),
    ("DELETE", "/storage/v1/b/b/o/x", {}, "delete"),
    ("PATCH", "/storage/v1/b/b/o/x", {}, "metadata"),
    # The evaluator lease's writes carry preconditions.
    ("POST", "/upload/storage/v1/b/b/o", {"ifGenerationMatch": ["0"]}, "lease"),
    ("DELETE", "/storage/v1/b/b/o/lease", {"ifGenerationMatch": ["17"]}, "lease"),
])
def test_each_request_has_its_kind(method, path, query, kind):
    assert request_kind(method, path, query) == kind


def test_a_plan_applies_to_its_kinds_until_its_end():
    plan = FaultPlan("error", status=429, kinds=("upload", "lease"), until=100.0)
    assert plan.applies("upload", 99.0) and plan.applies("lease", 0.0)
    assert not plan.applies("read", 99.0) and not plan.applies("upload", 100.0)


@pytest.mark.parametrize("kwargs, words", [
    (dict(mode="explode"), "fault mode 'explode'"),
    (dict(mode="error", kinds=("writes",)), r"request kinds \['writes'\]: use some of read"),
    (dict(mode="error", status=200), "status 200"),
    (dict(mode="delay"), "delay_secs > 0"),
    (dict(mode="error", secs=0), "give secs > 0"),
])
def test_a_bad_plan_says_why(kwargs, words):
    with pytest.raises(ValueError, match=words):
        FaultPlan(**kwargs)


def test_the_emulator_reads_a_new_plan_when_the_file_changes(tmp_path):
    path = str(tmp_path / "faults.json")
    faults = FaultFile(path)
    assert faults.plan() is None
    FaultFile.write(path, FaultPlan("reset", kinds=("read",), secs=30))
    first = faults.plan()
    assert first.mode == "reset" and first.kinds == ("read",) and first.until > 0
    FaultFile.write(path, FaultPlan("delay", delay_secs=2.0, secs=5))
    os.utime(path, ns=(1, 1))  # a different file time, whatever the clock's resolution
    assert faults.plan().mode == "delay"
    FaultFile.write(path, None)
    os.utime(path, ns=(2, 2))
    assert faults.plan() is None and json.load(open(path)) == {}
    assert FaultFile(None).plan() is None
