"""GCS's request preconditions (`ifGenerationMatch` and the rest, their `ifSource...`
forms on copies), its times and its error bodies: pure, for the emulator's dispatcher."""

from __future__ import annotations

import datetime

__all__ = ["CONDITIONS", "conditions_fail", "error_body", "query_conditions", "rfc3339"]

CONDITIONS = ("ifGenerationMatch", "ifGenerationNotMatch", "ifMetagenerationMatch",
              "ifMetagenerationNotMatch")


def rfc3339(ns: int) -> str:
    """GCS's form of a time: UTC, milliseconds."""
    dt = datetime.datetime.fromtimestamp(ns // 1_000_000_000, datetime.timezone.utc)
    return f"{dt:%Y-%m-%dT%H:%M:%S}.{ns // 1_000_000 % 1000:03d}Z"


def error_body(status: int, reason: str, message: str) -> dict:
    """A JSON error body as GCS sends it."""
    return {"error": {"code": status, "message": message,
                      "errors": [{"domain": "global", "reason": reason, "message": message}]}}


def conditions_fail(conditions: dict[str, str], obj, prefix: str = "") -> str | None:
    """The first precondition that `obj` (None: no such object) fails."""
    generation = int(obj["generation"]) if obj else None
    metageneration = int(obj["metageneration"]) if obj else None
    for name in CONDITIONS:
        raw = conditions.get(prefix + name[2:] if prefix else name)
        if raw is None:
            continue
        value = int(raw)
        if name == "ifGenerationMatch":
            ok = generation is None if value == 0 else generation == value
        elif name == "ifGenerationNotMatch":
            ok = generation is not None if value == 0 else generation != value
        elif name == "ifMetagenerationMatch":
            ok = metageneration == value
        else:
            ok = metageneration != value
        if not ok:
            return (prefix + name[2:]) if prefix else name
    return None


def query_conditions(query) -> dict[str, str]:
    """The precondition parameters of a parsed query string, first values."""
    return {k: v[0] for k, v in query.items()
            if k.startswith("if") and k[2:].startswith(("Generation", "Metageneration",
                                                        "SourceGeneration",
                                                        "SourceMetageneration"))}
