"""trainexec.estimator.RunConfig answers as tf.estimator.RunConfig does: its defaults, the
task it reads from TF_CONFIG when it is built, its default session config in a cluster,
`replace()`, and its refusals (tf.estimator's words, then trainexec's fix). On the 2.15
line the same TF_CONFIGs are given to tf.estimator's RunConfig beside ours."""

import json

import pytest
import tensorflow as tf

import trainexec.estimator as te
from test_estimator_engine_task_placement import PLACED, REFUSED
from tf_configs import tf_config
from trainexec.errors import ConfigError

pytestmark = pytest.mark.tf_line

CLUSTER = {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"], "ps": ["h3:2222"]}
TASK_ANSWERS = ("task_type", "task_id", "master", "evaluation_master", "is_chief",
                "num_worker_replicas", "num_ps_replicas", "global_id_in_cluster", "service",
                "model_dir", "session_config")


def built_under(monkeypatch, text, api=te, **arguments):
    """`api.RunConfig(**arguments)` built while TF_CONFIG is `text` (None: unset)."""
    if text is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", text)
    return api.RunConfig(**arguments)


def answers(config):
    found = {name: getattr(config, name) for name in TASK_ANSWERS}
    found["cluster_spec"] = config.cluster_spec.as_dict()
    return found


def test_defaults_without_tf_config(no_tf_config):
    config = te.RunConfig()
    assert config.as_dict() == dict(
        model_dir=None, tf_random_seed=None, save_summary_steps=100,
        save_checkpoints_steps=None, save_checkpoints_secs=600, session_config=None,
        keep_checkpoint_max=5, keep_checkpoint_every_n_hours=10000, log_step_count_steps=100,
        device_fn=None, protocol=None, experimental_max_worker_delay_secs=None,
        session_creation_timeout_secs=7200, checkpoint_save_graph_def=True,
        train_distribute=None, eval_distribute=None)
    assert answers(config) == dict(
        task_type=te.TaskType.WORKER, task_id=0, master="", evaluation_master="",
        is_chief=True, num_worker_replicas=1, num_ps_replicas=0, global_id_in_cluster=0,
        service=None, model_dir=None, session_config=None, cluster_spec={})
    assert (config.train_distribute, config.eval_distribute) == (None, None)


def test_task_types_are_tf_estimators_names():
    assert {name: getattr(te.TaskType, name) for name in
            ("MASTER", "PS", "WORKER", "CHIEF", "EVALUATOR")} == dict(
        MASTER="master", PS="ps", WORKER="worker", CHIEF="chief", EVALUATOR="evaluator")


def test_the_task_is_read_from_tf_config_once_when_built(monkeypatch):
    config = built_under(monkeypatch, tf_config("worker", 1, CLUSTER))
    assert (config.task_type, config.task_id, config.is_chief) == ("worker", 1, False)
    assert config.master == "grpc://h2:2222"
    assert (config.num_ps_replicas, config.num_worker_replicas) == (1, 3)
    assert config.cluster_spec.as_dict() == CLUSTER
    assert list(config.session_config.device_filters) == ["/job:ps", "/job:worker/task:1"]
    assert config.save_checkpoints_secs == 600 and config.save_checkpoints_steps is None
    monkeypatch.setenv("TF_CONFIG", tf_config("chief", 0, CLUSTER))
    replaced = config.replace(tf_random_seed=3)
    assert (replaced.task_type, replaced.task_id, replaced.master) == (
        "worker", 1, "grpc://h2:2222")
    monkeypatch.setenv("TF_CONFIG", tf_config("worker", 5, CLUSTER))
    with pytest.raises(ConfigError, match="^5 is not a valid task_id .*task.index 5"):
        te.RunConfig()


def test_tf_config_gives_model_dir_and_service(monkeypatch):
    config = built_under(monkeypatch, json.dumps({"model_dir": "/tmp/123",
                                                  "service": {"name": "x"}}))
    assert (config.model_dir, config.service) == ("/tmp/123", {"name": "x"})
    with pytest.raises(ConfigError, match="must have the same value as the model_dir in "
                                          "TF_CONFIG. RunConfig.model_dir='/tmp/456'"):
        te.RunConfig(model_dir="/tmp/456")


def test_a_config_from_a_cluster_config_reads_no_tf_config(monkeypatch):
    from trainexec.cluster.config import ClusterConfig

    monkeypatch.setenv("TF_CONFIG", "not read")
    cluster = ClusterConfig.from_json(tf_config("ps", 0, CLUSTER))
    config = te.RunConfig(cluster=cluster)
    assert (config.task_type, config.master, config.global_id_in_cluster) == (
        "ps", "grpc://h3:2222", 3)


@pytest.mark.parametrize("task_type, filters", [
    ("chief", ["/job:ps", "/job:chief"]),
    ("ps", ["/job:ps", "/job:worker", "/job:chief", "/job:master"]),
    ("evaluator", None),
])
def test_in_a_cluster_the_default_session_config_filters_devices(monkeypatch, task_type,
                                                                  filters):
    config = built_under(monkeypatch, tf_config(task_type, 0, CLUSTER))
    if filters is None:
        assert config.session_config is None
    else:
        assert list(config.session_config.device_filters) == filters
        assert config.session_config.allow_soft_placement
    assert config.replace(session_config=None).session_config is None
    given = tf.compat.v1.ConfigProto(log_device_placement=True)
    assert built_under(monkeypatch, tf_config(task_type, 0, CLUSTER),
                       session_config=given).session_config is given


def test_replace_copies_the_config_its_class_and_attributes(no_tf_config):
    class MyConfig(te.RunConfig):
        pass

    config = MyConfig(save_checkpoints_steps=10)
    config.i_am_test = True
    replaced = config.replace(model_dir="/tmp/m", save_checkpoints_secs=30)
    assert type(replaced) is MyConfig and replaced.i_am_test
    assert (replaced.model_dir, replaced.save_checkpoints_steps,
            replaced.save_checkpoints_secs) == ("/tmp/m", None, 30)
    assert (config.model_dir, config.save_checkpoints_steps,
            config.save_checkpoints_secs) == (None, 10, None)


@pytest.mark.parametrize("changes, error, words", [
    (dict(master="_master"), ValueError, "^Replacing master is not supported. Allowed "
     "properties are model_dir, .*set TF_CONFIG, then build a new RunConfig"),
    (dict(task_type="chief"), ValueError, "^Replacing task_type is not supported"),
    (dict(some_undefined_property=1), ValueError,
     "^Replacing some_undefined_property is not supported. Allowed properties are "
     "model_dir, tf_random_seed"),
    (dict(model_dir=""), ValueError, r"^model_dir should be non-empty. RunConfig.replace\("),
    (dict(keep_checkpoint_every_n_hours=0), ValueError,
     "^keep_checkpoint_every_n_hours should be > 0"),
    (dict(save_checkpoints_steps=1, save_checkpoints_secs=2), ValueError,
     "cannot be both set"),
    (dict(train_distribute=object()), ConfigError,
     "RunConfig `train_distribute` is <object object at .*>, not a strategy: "
     "trainexec.estimator runs tf.distribute.MirroredStrategy"),
])
def test_replace_refusals(no_tf_config, changes, error, words):
    with pytest.raises(error, match=words):
        te.RunConfig().replace(**changes)


# Bad constructor arguments (tests/test_estimator_engine_run_config_checks.py has a row
# per field): the exception type and the words that say what to fix.
@pytest.mark.parametrize("arguments, error, words", [
    (dict(save_checkpoints_steps=10, save_checkpoints_secs=60), ValueError,
     "cannot be both set. RunConfig.save_checkpoints_steps=10, save_checkpoints_secs=60.: "
     "give one of them"),
    (dict(save_checkpoints_steps=-1), ValueError, "save_checkpoints_steps"),
    (dict(keep_checkpoint_max=-1), ValueError, "keep_checkpoint_max"),
    (dict(tf_random_seed="7"), ValueError, "tf_random_seed"),
    (dict(model_dir=""), ValueError, "^model_dir should be non-empty. RunConfig.model_dir=''.: "
     "give a directory"),
    (dict(device_fn=lambda x: "/cpu:0"), ValueError, 'exactly one argument "op"'),
    (dict(train_distribute=object()), ConfigError,
     "RunConfig `train_distribute` is <object object at .*>, not a strategy"),
    (dict(eval_distribute=object()), ConfigError,
     "RunConfig `eval_distribute` is <object object at .*>, not a strategy"),
])
def test_constructor_refusals(no_tf_config, arguments, error, words):
    with pytest.raises(error, match=words):
        te.RunConfig(**arguments)


@pytest.mark.parametrize("field", ["train_distribute", "eval_distribute"])
def test_tensorflow_2s_parameter_server_strategy_is_named_with_tf_estimators_words(
        no_tf_config, field):
    import tensorflow as tf

    strategy_class = tf.distribute.experimental.ParameterServerStrategy
    strategy = strategy_class.__new__(strategy_class)  # no cluster needed to be refused
    with pytest.raises(ValueError) as info:
        te.RunConfig(**{field: strategy})
    assert str(info.value).startswith(
        "Please use `tf.compat.v1.distribute.experimental.ParameterServerStrategy` for "
        "parameter server strategy with estimator.")
    assert f"RunConfig `{field}`" in str(info.value)
    assert "leave it unset" in str(info.value)  # what trainexec.estimator does instead


# -- beside tf.estimator's RunConfig (TensorFlow 2.15) ------------------------------------
# Where tf.estimator fails in its own code (an IndexError, TypeError, AttributeError...),
# trainexec answers (an empty job counts no task), or refuses in its own words (also where
# tf.estimator names a value it cannot use, such as a list as the task type).
TF_ESTIMATOR_FAILS = {"a TFJob with 0 worker replicas, its ps"}  # max() arg is an empty sequence
TRAINEXEC_WORDS = {
    "an index a job given by index lacks", "a cluster that is not an object",
    "a job that is not a list", "an address that is not a string",
    "a job keyed by something else than an index", "a type that is not a string",
    "an index that is not a number", "a task that is not an object"}
TF_ESTIMATOR_TAKES = {"a session_master that is not a string"}


@pytest.mark.estimator
@pytest.mark.parametrize("text", [
    json.dumps(row[0]) for name, row in PLACED.items() if name not in TF_ESTIMATOR_FAILS
] + [json.dumps({"model_dir": "/tmp/123", "service": {"a": [1]}}), None],
    ids=[name for name in PLACED if name not in TF_ESTIMATOR_FAILS] + ["model_dir", "unset"])
def test_the_same_tf_config_gives_the_same_answers(monkeypatch, text):
    theirs = built_under(monkeypatch, text, api=tf.estimator)
    ours = built_under(monkeypatch, text)
    assert answers(ours) == answers(theirs)


def first_sentence(message):
    """tf.estimator's words: its message up to the value it shows."""
    for end in (":\n", "\n", ". "):
        message = message.split(end)[0]
    return message


@pytest.mark.estimator
@pytest.mark.parametrize("name", [name for name in REFUSED if name not in TF_ESTIMATOR_TAKES])
def test_the_same_tf_config_is_refused_with_the_same_words(monkeypatch, name):
    text = json.dumps(REFUSED[name][0])
    with pytest.raises(Exception) as theirs:
        built_under(monkeypatch, text, api=tf.estimator)
    with pytest.raises(Exception) as ours:
        built_under(monkeypatch, text)
    if name in TRAINEXEC_WORDS:
        assert not str(theirs.value).startswith(first_sentence(str(ours.value)))
        return
    assert isinstance(ours.value, type(theirs.value))
    assert str(ours.value).startswith(first_sentence(str(theirs.value)))


@pytest.mark.estimator
@pytest.mark.parametrize("name", sorted(TF_ESTIMATOR_FAILS))
def test_where_tf_estimator_fails_on_a_tf_config_trainexec_answers(monkeypatch, name):
    text = json.dumps(PLACED[name][0])
    with pytest.raises(ValueError, match="max.. arg is an empty sequence"):
        built_under(monkeypatch, text, api=tf.estimator)
    assert built_under(monkeypatch, text).global_id_in_cluster == (
        PLACED[name][1]["global_id_in_cluster"])


@pytest.mark.estimator
def test_replace_behaves_as_tf_estimators(no_tf_config):
    for changes in (dict(save_checkpoints_steps=100), dict(save_checkpoints_secs=None),
                    dict(save_checkpoints_steps=None, save_checkpoints_secs=None),
                    dict(tf_random_seed=None, model_dir=None, keep_checkpoint_max=None)):
        theirs = tf.estimator.RunConfig().replace(**changes)
        ours = te.RunConfig().replace(**changes)
        assert ours.as_dict() == {key: getattr(theirs, key) for key in ours.as_dict()}
