"""trainexec/testing/gcs/preconditions.py: GCS's preconditions, times and error bodies."""

import pytest

from trainexec.testing.gcs.preconditions import (conditions_fail, error_body,
                                                 query_conditions, rfc3339)

pytestmark = pytest.mark.any_line

OBJ = {"generation": "7", "metageneration": "1"}


@pytest.mark.parametrize("conditions, obj, failed", [
    ({}, OBJ, None),
    ({"ifGenerationMatch": "0"}, None, None),
    ({"ifGenerationMatch": "0"}, OBJ, "ifGenerationMatch"),
    ({"ifGenerationMatch": "7"}, OBJ, None),
    ({"ifGenerationMatch": "6"}, OBJ, "ifGenerationMatch"),
    ({"ifGenerationNotMatch": "0"}, None, "ifGenerationNotMatch"),
    ({"ifGenerationNotMatch": "0"}, OBJ, None),
    ({"ifGenerationNotMatch": "7"}, OBJ, "ifGenerationNotMatch"),
    ({"ifMetagenerationMatch": "1"}, OBJ, None),
    ({"ifMetagenerationMatch": "2"}, OBJ, "ifMetagenerationMatch"),
    ({"ifMetagenerationNotMatch": "1"}, OBJ, "ifMetagenerationNotMatch"),
    ({"ifGenerationMatch": "7", "ifMetagenerationMatch": "2"}, OBJ, "ifMetagenerationMatch"),
])
def test_the_first_condition_the_object_fails(conditions, obj, failed):
    assert conditions_fail(conditions, obj) == failed


def test_a_copys_source_conditions_are_read_under_their_prefix():
    conditions = {"ifSourceGenerationMatch": "6", "ifGenerationMatch": "7"}
    assert conditions_fail(conditions, OBJ, "ifSource") == "ifSourceGenerationMatch"
    assert conditions_fail({"ifGenerationMatch": "6"}, OBJ, "ifSource") is None


def test_query_conditions_are_the_precondition_parameters_first_values():
    query = {"ifGenerationMatch": ["0", "1"], "ifSourceMetagenerationMatch": ["2"],
             "alt": ["media"], "ifOther": ["3"]}
    assert query_conditions(query) == {"ifGenerationMatch": "0",
                                       "ifSourceMetagenerationMatch": "2"}


def test_times_are_utc_with_milliseconds_and_errors_are_gcs_bodies():
    assert rfc3339(1_700_000_000_123_456_789) == "2023-11-14T22:13:20.123Z"
    assert error_body(404, "notFound", "gone") == {"error": {
        "code": 404, "message": "gone",
        "errors": [{"domain": "global", "reason": "notFound", "message": "gone"}]}}
