"""The strategies trainexec.estimator.RunConfig takes for `train_distribute` /
`eval_distribute`, and those it refuses before anything is written: one row per refusal,
each naming the field, the value and what to use instead."""

import collections
import json

import pytest
import tensorflow as tf

import trainexec.estimator as te
from trainexec.errors import ConfigError
from trainexec.estimator_engine.strategy_checks import (MIRRORED, MULTI_WORKER_MIRRORED,
                                                        PARAMETER_SERVER, strategy_kind)

pytestmark = pytest.mark.tf_line

# tf.estimator's DistributeConfig (tf.contrib's, gone from TensorFlow's public API).
DistributeConfig = collections.namedtuple(
    "DistributeConfig", ["train_distribute", "eval_distribute", "remote_cluster"])
WORKERS = {"worker": ["h0:2222", "h1:2222"]}


def unbuilt(cls):
    """An instance of a strategy class that needs no devices or cluster to be refused."""
    return cls.__new__(cls)


@pytest.mark.parametrize("make, kind", [
    (lambda: tf.distribute.MirroredStrategy(), MIRRORED),
    (lambda: tf.compat.v1.distribute.MirroredStrategy(), MIRRORED),
    (lambda: tf.distribute.MultiWorkerMirroredStrategy(), MULTI_WORKER_MIRRORED),
    (lambda: tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy(),
     MULTI_WORKER_MIRRORED),
    (lambda: tf.compat.v1.distribute.experimental.ParameterServerStrategy(),
     PARAMETER_SERVER),
])
def test_the_strategies_tf_estimator_ran_are_taken(no_tf_config, make, kind):
    strategy = make()
    assert strategy_kind(strategy) == kind
    config = te.RunConfig(train_distribute=strategy, eval_distribute=strategy)
    assert config.train_distribute is strategy and config.eval_distribute is strategy


@pytest.mark.parametrize("field", ["train_distribute", "eval_distribute"])
@pytest.mark.parametrize("value, words", [
    (unbuilt(tf.distribute.experimental.ParameterServerStrategy),
     "^Please use `tf.compat.v1.distribute.experimental.ParameterServerStrategy` for "
     "parameter server strategy with estimator. RunConfig `{field}` is TensorFlow 2's "
     "ParameterServerStrategy.*leave it unset for between-graph training"),
    (unbuilt(tf.distribute.TPUStrategy),
     r"RunConfig `{field}` is a TPU strategy \(TPUStrategy.*\): trainexec.estimator does "
     "not run on TPUs.*"
     "Keras model with TPUStrategy"),
    (tf.distribute.OneDeviceStrategy("/cpu:0"),
     "RunConfig `{field}` is a OneDeviceStrategy, which adds nothing to an Estimator: "
     "leave `{field}` unset to train on one device"),
    (unbuilt(tf.distribute.experimental.CentralStorageStrategy),
     "RunConfig `{field}` is a CentralStorageStrategy: trainexec.estimator runs "
     "tf.distribute.MirroredStrategy, .*Give one of them, or leave `{field}` unset"),
    ("mirrored", "RunConfig `{field}` is 'mirrored', not a strategy: trainexec.estimator "
     "runs tf.distribute.MirroredStrategy"),
], ids=["tf2-ps", "tpu", "one-device", "central-storage", "a-string"])
def test_refused_strategies_name_the_field_the_value_and_the_way_out(
        no_tf_config, field, value, words):
    with pytest.raises(ConfigError, match=words.format(field=field)):
        te.RunConfig(**{field: value})
    with pytest.raises(ConfigError, match=words.format(field=field)):
        te.RunConfig().replace(**{field: value})


def test_experimental_distribute_gives_the_two_fields_as_tf_estimator_read_it(no_tf_config):
    train, evaluate = tf.distribute.MirroredStrategy(), tf.distribute.MirroredStrategy()
    config = te.RunConfig(experimental_distribute=DistributeConfig(train, evaluate, None))
    assert config.train_distribute is train and config.eval_distribute is evaluate
    with pytest.raises(ConfigError, match=r"^Either `train_distribute` or"
                       r"`experimental_distribute.train_distribute` can be set. "):
        te.RunConfig(train_distribute=train,
                     experimental_distribute=DistributeConfig(train, None, None))


def test_a_remote_cluster_is_refused_naming_the_way_out(no_tf_config):
    remote = tf.train.ClusterSpec(WORKERS)
    with pytest.raises(ConfigError, match="`experimental_distribute.remote_cluster` .* "
                       "standalone client.*its own TF_CONFIG .*trainexec launch"):
        te.RunConfig(experimental_distribute=DistributeConfig(
            tf.distribute.MirroredStrategy(), None, remote))


def _tf_config(monkeypatch, cluster, task_type, index):
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": cluster, "task": {"type": task_type, "index": index}}))


@pytest.mark.parametrize("cluster, task, make, words", [
    ({"chief": ["h0:1"], "worker": ["h1:1"]}, ("worker", 0),
     lambda: unbuilt(tf.distribute.MirroredStrategy),
     r"`train_distribute` \(MirroredStrategy\) trains on one machine, but TF_CONFIG puts "
     "worker:0 in a cluster .*MultiWorkerMirroredStrategy"),
    ({"chief": ["h0:1"], "worker": ["h1:1"], "ps": ["h2:1"]}, ("chief", 0),
     lambda: unbuilt(tf.distribute.MultiWorkerMirroredStrategy),
     "keeps every variable on its workers, but TF_CONFIG's cluster has ps tasks "
     r"\(chief:0\): drop the ps job, or give tf.compat.v1.distribute.experimental."
     "ParameterServerStrategy"),
    ({"master": ["h0:1"], "worker": ["h1:1"]}, ("master", 0),
     lambda: unbuilt(tf.distribute.MultiWorkerMirroredStrategy),
     'a "master" \\(master:0\\): .*Rename cluster.master to "chief"'),
], ids=["mirrored-in-a-cluster", "mwms-beside-ps", "master"])
def test_a_strategy_the_cluster_cannot_run_is_refused(monkeypatch, cluster, task, make,
                                                       words):
    _tf_config(monkeypatch, cluster, *task)
    with pytest.raises(ConfigError, match=words):
        te.RunConfig(train_distribute=make())


def test_a_cluster_of_workers_alone_is_taken_with_a_strategy_worker_0_leading(monkeypatch):
    strategy = unbuilt(tf.distribute.MultiWorkerMirroredStrategy)
    _tf_config(monkeypatch, WORKERS, "worker", 0)
    lead = te.RunConfig(train_distribute=strategy)
    assert (lead.is_chief, lead.num_worker_replicas, lead.master) == (
        True, 2, "grpc://h0:2222")
    _tf_config(monkeypatch, WORKERS, "worker", 1)
    other = te.RunConfig(train_distribute=strategy)
    assert (other.is_chief, other.num_worker_replicas, other.global_id_in_cluster) == (
        False, 2, 1)
    with pytest.raises(ConfigError, match='must have one "chief" node'):
        te.RunConfig()  # without a strategy, as before: an Estimator needs a chief
    _tf_config(monkeypatch, WORKERS, "evaluator", 0)  # it evaluates with a strategy
    evaluator = te.RunConfig(eval_distribute=tf.distribute.MirroredStrategy())
    assert (evaluator.is_chief, evaluator.master, evaluator.num_worker_replicas) == (
        False, "", 0)
