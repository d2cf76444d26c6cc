"""The shared constructor checks (hidden units, dropout, a head) and the head a
classifier or regressor makes."""

import pytest

from trainexec.estimator_engine.canned import arguments
from trainexec.estimator_engine.heads import (BinaryClassHead, MultiClassHead,
                                              RegressionHead)

pytestmark = pytest.mark.tf_line


@pytest.mark.parametrize("units, ok", [
    ([64, 32], True), ((3,), True), ([], False), ([0], False), ([4, -1], False),
    ([2.5], False), ([True], False), ("12", False), (7, False), (None, False)])
def test_hidden_units(units, ok):
    if ok:
        assert arguments.check_hidden_units(units) == list(units)
    else:
        with pytest.raises(ValueError, match="hidden_units"):
            arguments.check_hidden_units(units)


@pytest.mark.parametrize("dropout, ok", [(None, True), (0.0, True), (0.5, True),
                                         (1.0, False), (-0.1, False), ("0.5", False)])
def test_dropout(dropout, ok):
    if ok:
        assert arguments.check_dropout(dropout) == dropout
    else:
        with pytest.raises(ValueError, match="dropout must be None or a probability"):
            arguments.check_dropout(dropout)


def test_classifiers_and_regressors_make_tf_estimators_heads():
    assert isinstance(arguments.classification_head(2, None, None, "sum"),
                      BinaryClassHead)
    head = arguments.classification_head(4, "w", None, "sum_over_batch_size")
    assert isinstance(head, MultiClassHead) and head.logits_dimension == 4
    with pytest.raises(ValueError, match=r"n_classes must be > 2: 1\."):
        arguments.classification_head(1, None, None, "sum")
    regression = arguments.regression_head(3, None, "sum")
    assert isinstance(regression, RegressionHead) and regression.logits_dimension == 3
    assert arguments.check_head(regression) is regression
    with pytest.raises(ValueError, match="head must be a Head"):
        arguments.check_head(object())
