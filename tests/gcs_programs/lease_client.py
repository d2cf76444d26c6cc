"""google-cloud-storage against the GCS emulator: what an exclusive lease needs.

Usage:
  lease_client.py create BUCKET NAME DATA START_AT
      at time START_AT (epoch seconds) creates NAME only if absent
      (if_generation_match=0); prints {"won": bool, "code": HTTP status, ...}
  lease_client.py preconditions BUCKET PREFIX
      generation-matched overwrite and delete, metageneration, reload(); prints
      {"preconditions": "ok" or the error}

Needs the emulator's client_env() (STORAGE_EMULATOR_HOST, REQUESTS_CA_BUNDLE) and
hosts line.
"""

from __future__ import annotations

import datetime
import json
import sys
import time
import traceback

from google.api_core import exceptions
from google.cloud import storage


def create(bucket_name: str, name: str, data: str, start_at: float) -> dict:
    blob = storage.Client().bucket(bucket_name).blob(name)
    time.sleep(max(0.0, start_at - time.time()))
    try:
        blob.upload_from_string(data, if_generation_match=0)
    except exceptions.PreconditionFailed as e:
        return {"won": False, "code": e.code, "error": type(e).__name__}
    return {"won": True, "code": 200, "generation": blob.generation}


def preconditions(bucket_name: str, prefix: str) -> None:
    client = storage.Client()
    bucket = client.bucket(bucket_name)
    blob = bucket.blob(f"{prefix}/lease")
    before = datetime.datetime.now(datetime.timezone.utc)
    blob.upload_from_string("holder-1", if_generation_match=0)
    first = blob.generation
    assert isinstance(first, int) and first > 0, first
    assert blob.metageneration == 1, blob.metageneration

    # A second create-if-absent loses with 412.
    try:
        bucket.blob(f"{prefix}/lease").upload_from_string("holder-2", if_generation_match=0)
        raise AssertionError("create-if-absent over an existing object succeeded")
    except exceptions.PreconditionFailed as e:
        assert e.code == 412, e.code

    # reload(): what the emulator holds, its clock's `updated`.
    seen = bucket.blob(f"{prefix}/lease")
    seen.reload()
    after = datetime.datetime.now(datetime.timezone.utc)
    assert seen.generation == first and seen.metageneration == 1, (seen.generation, first)
    assert seen.size == len("holder-1"), seen.size
    slack = datetime.timedelta(milliseconds=1)  # GCS times have milliseconds
    assert before - slack <= seen.updated <= after, (before, seen.updated, after)
    assert seen.download_as_bytes() == b"holder-1"

    # Renew: overwrite under the generation held; a new, larger generation.
    time.sleep(0.01)
    blob.upload_from_string("holder-1 renewed", if_generation_match=first)
    second = blob.generation
    assert second > first, (first, second)
    seen.reload()
    assert seen.generation == second and seen.updated > before, (seen.generation, second)
    assert seen.download_as_bytes() == b"holder-1 renewed"
    try:  # the first version is gone (one live version per object)
        bucket.blob(f"{prefix}/lease", generation=first).delete()
        raise AssertionError("deleting a replaced generation succeeded")
    except exceptions.NotFound:
        pass

    # A stale generation: overwrite and delete both fail with 412.
    for attempt in (lambda: bucket.blob(f"{prefix}/lease").upload_from_string(
                        "stale", if_generation_match=first),
                    lambda: bucket.blob(f"{prefix}/lease").delete(if_generation_match=first)):
        try:
            attempt()
            raise AssertionError("a write under a stale generation succeeded")
        except exceptions.PreconditionFailed:
            pass
    assert bucket.blob(f"{prefix}/lease").download_as_bytes() == b"holder-1 renewed"

    # Metadata patch: metageneration 2, same generation; metageneration preconditions.
    seen.metadata = {"owner": "holder-1"}
    seen.patch(if_metageneration_match=1)
    assert seen.metageneration == 2 and seen.generation == second, seen.metageneration
    try:
        seen.patch(if_metageneration_match=1)
        raise AssertionError("patch under a stale metageneration succeeded")
    except exceptions.PreconditionFailed:
        pass
    # A missing object: a generation precondition on it fails (412); reading is 404.
    try:
        bucket.blob(f"{prefix}/absent").upload_from_string("x", if_generation_match=first)
        raise AssertionError("an upload matching a generation of a missing object succeeded")
    except exceptions.PreconditionFailed:
        pass
    assert not bucket.blob(f"{prefix}/absent").exists()

    # Release: delete under the generation held; then it is gone (404).
    blob.delete(if_generation_match=second)
    try:
        bucket.blob(f"{prefix}/lease").reload()
        raise AssertionError("the deleted lease is still there")
    except exceptions.NotFound:
        pass
    # Absent again: create-if-absent wins again, with a generation never used before.
    again = bucket.blob(f"{prefix}/lease")
    again.upload_from_string("holder-2", if_generation_match=0)
    assert again.generation > second, (again.generation, second)

    # Larger than one request: a resumable upload keeps its precondition.
    big = "x" * (9 * 1024 * 1024)
    try:
        bucket.blob(f"{prefix}/lease").upload_from_string(big, if_generation_match=0)
        raise AssertionError("a resumable create-if-absent over an existing object succeeded")
    except exceptions.PreconditionFailed:
        pass
    large = bucket.blob(f"{prefix}/large")
    large.upload_from_string(big, if_generation_match=0)
    assert large.size == len(big) and large.generation > again.generation
    assert bucket.blob(f"{prefix}/large").download_as_bytes() == big.encode()

    names = sorted(b.name for b in client.list_blobs(bucket_name, prefix=f"{prefix}/"))
    assert names == [f"{prefix}/large", f"{prefix}/lease"], names


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "create":
        print(json.dumps(create(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))),
              flush=True)
    elif command == "preconditions":
        try:
            preconditions(sys.argv[2], sys.argv[3])
            result = "ok"
        except BaseException:  # noqa: BLE001 - reported to the test
            result = traceback.format_exc()
        print(json.dumps({"preconditions": result}), flush=True)
    else:
        sys.exit(f"unknown command {command!r}")
