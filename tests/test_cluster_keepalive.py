"""gRPC keepalive for ParameterServerStrategy tasks (trainexec.cluster.keepalive)."""

import os

import pytest

from tf_configs import keras_plan

from trainexec.errors import ConfigError
from trainexec.cluster import keepalive
from trainexec.cluster.keepalive import (DEFAULT_KEEPALIVE_SECS, OPTIONS_VAR, SETTING_VAR,
                                       apply_keepalive, keepalive_options, keepalive_secs)
from trainexec.keras.strategy import make_strategy

pytestmark = pytest.mark.tf_line

PSS = {"chief": ["127.0.0.1:2000"], "worker": ["127.0.0.1:2001", "127.0.0.1:2002"],
       "ps": ["127.0.0.1:2003"]}


def _options(millis, *names):
    return ",".join(f"{name}={millis}" for name in names or keepalive.OPTIONS)


FIVE_SECS = _options(5000)
USER_SET = ("grpc.keepalive_time_ms=60000,grpc.keepalive_timeout_ms=20000,"
            "grpc.http2.ping_timeout_ms=20000,grpc.min_reconnect_backoff_ms=20000")


def test_the_options_are_keepalive_ping_timeouts_and_the_connect_timeout():
    assert FIVE_SECS == ("grpc.keepalive_time_ms=5000,grpc.keepalive_timeout_ms=5000,"
                         "grpc.http2.ping_timeout_ms=5000,grpc.min_reconnect_backoff_ms=5000")


@pytest.mark.parametrize("existing, secs, expected", [
    ("", 5.0, FIVE_SECS),
    ("", 0.25, _options(250)),
    ("grpc.max_metadata_size=16384", 5.0, "grpc.max_metadata_size=16384," + FIVE_SECS),
    # what the user set wins, option by option
    (USER_SET, 5.0, USER_SET),
    ("grpc.keepalive_time_ms=60000", 5.0,
     "grpc.keepalive_time_ms=60000," + _options(5000, *keepalive.OPTIONS[1:])),
    (" grpc.keepalive_timeout_ms = 20000 ", 5.0,
     "grpc.keepalive_timeout_ms = 20000," + _options(5000, *(
         name for name in keepalive.OPTIONS if name != "grpc.keepalive_timeout_ms"))),
    ("grpc.max_metadata_size=16384", 0.0, "grpc.max_metadata_size=16384"),
    ("", 0.0, ""),
])
def test_keepalive_options(existing, secs, expected):
    assert keepalive_options(existing, secs) == expected


@pytest.mark.parametrize("value, secs", [(None, DEFAULT_KEEPALIVE_SECS), ("", 5.0),
                                         ("2.5", 2.5), ("0", 0.0), (" 10 ", 10.0)])
def test_keepalive_secs(value, secs):
    environ = {} if value is None else {SETTING_VAR: value}
    assert keepalive_secs(environ) == secs


@pytest.mark.parametrize("value", ["-1", "five", "nan", "inf"])
def test_keepalive_secs_refuses_what_is_not_seconds(value):
    with pytest.raises(ConfigError, match=f"{SETTING_VAR}=.* must be a number of seconds"):
        keepalive_secs({SETTING_VAR: value})


def test_apply_keepalive_sets_the_tensorflow_variable_once():
    environ = {}
    assert apply_keepalive(environ) == FIVE_SECS
    assert environ == {OPTIONS_VAR: FIVE_SECS}
    assert apply_keepalive(environ) == FIVE_SECS  # again: unchanged
    assert environ == {OPTIONS_VAR: FIVE_SECS}


def test_apply_keepalive_off_leaves_the_environment_alone():
    environ = {SETTING_VAR: "0"}
    assert apply_keepalive(environ) is None
    assert environ == {SETTING_VAR: "0"}
    environ = {SETTING_VAR: "0", OPTIONS_VAR: "grpc.max_metadata_size=1"}
    assert apply_keepalive(environ) == "grpc.max_metadata_size=1"


def _plan(task):
    return keras_plan(PSS, task)


def test_the_parameter_server_chief_gets_keepalive_before_its_strategy(monkeypatch):
    import tensorflow as tf

    monkeypatch.delenv(OPTIONS_VAR, raising=False)
    monkeypatch.delenv(SETTING_VAR, raising=False)
    seen = []
    monkeypatch.setattr(tf.distribute, "ParameterServerStrategy",
                        lambda resolver: seen.append(os.environ.get(OPTIONS_VAR)) or "pss")
    assert make_strategy(_plan("chief:0")) == "pss"
    assert seen == [FIVE_SECS]


@pytest.mark.parametrize("task", ["worker:1", "ps:0"])
def test_a_serving_task_gets_keepalive_before_its_server(monkeypatch, tmp_path, task):
    from fakes import FakeClock, FakeServer, serve_as_keras_task
    from trainexec.records.completion import record_training_complete

    monkeypatch.delenv(OPTIONS_VAR, raising=False)
    monkeypatch.setenv(SETTING_VAR, "3")
    FakeServer.made.clear()
    clock = FakeClock()
    clock.on_sleep = lambda clock: record_training_complete(str(tmp_path), None, 0, None)
    serve_as_keras_task(_plan(task), str(tmp_path), 20, clock=clock,
                        server_factory=FakeServer)
    assert [server.environ.get(OPTIONS_VAR) for server in FakeServer.made] == [
        _options(3000)]


def test_the_module_doc_states_the_bound_and_the_switch():
    doc = keepalive.__doc__
    assert "TF_GRPC_DEFAULT_OPTIONS" in doc and SETTING_VAR in doc and "3 * secs" in doc
    assert all(name in doc for name in keepalive.OPTIONS)


def test_the_modules_first_name_still_imports():
    from trainexec.keras import keepalive as first_home

    assert first_home.apply_keepalive is apply_keepalive
    assert set(first_home.__all__) == set(keepalive.__all__)
