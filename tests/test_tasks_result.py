"""trainexec/tasks/result.py: what `train_and_evaluate` returns: None when nothing was
evaluated, else a `(metrics, exports)` pair read by name or unpacked as tf.estimator's,
holding its own copies. (Which role returns one: tests/test_tasks_roles.py::
test_every_role_takes_its_steps_in_order.)"""

import types

import pytest

from trainexec.tasks.result import TrainResult, train_result

pytestmark = pytest.mark.any_line


def test_nothing_evaluated_is_none_even_with_exports():
    assert train_result(None, None) is None
    assert train_result(None, ["/m/export/latest/20"]) is None


def test_an_evaluation_without_metrics_is_still_a_result():
    result = train_result({}, None)
    assert result is not None and result.metrics == {} and result.exports == []


def test_it_unpacks_as_tf_estimators_pair_and_reads_by_name():
    result = train_result({"global_step": 20, "loss": 0.25},
                          [b"/m/export/best/20", "/m/export/latest/20"])
    metrics, exports = result
    assert metrics == result.metrics == {"global_step": 20, "loss": 0.25}
    # An Estimator's paths stay bytes and a KerasTrainer's str, in the EvalSpec's order.
    assert exports == result.exports == [b"/m/export/best/20", "/m/export/latest/20"]
    assert result == TrainResult({"global_step": 20, "loss": 0.25},
                                 [b"/m/export/best/20", "/m/export/latest/20"])


def test_the_result_holds_its_own_copies():
    metrics, exports = {"global_step": 20}, ["/m/export/latest/20"]
    result = train_result(metrics, exports)
    metrics["global_step"] = 30  # the caller keeps using its own
    exports.append("/m/export/latest/30")
    assert result == ({"global_step": 20}, ["/m/export/latest/20"])


def test_any_mapping_and_sequence_come_back_as_a_dict_and_a_list():
    result = train_result(types.MappingProxyType({"global_step": 20}), ("/m/e/1", "/m/e/2"))
    assert type(result.metrics) is dict and result.metrics == {"global_step": 20}
    assert type(result.exports) is list and result.exports == ["/m/e/1", "/m/e/2"]
