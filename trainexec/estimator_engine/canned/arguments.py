"""The constructor arguments every canned estimator shares, checked as tf.estimator
checks them but when the estimator is built (before anything is written), and the head
they make.

* `classification_head(n_classes, weight_column, label_vocabulary, loss_reduction)`:
  `BinaryClassHead` for 2 classes, `MultiClassHead` for more (which refuses fewer,
  in tf.estimator's words: ``n_classes must be > 2: 1.``);
* `regression_head(label_dimension, weight_column, loss_reduction)`: `RegressionHead`;
* `check_hidden_units(hidden_units)`: a non-empty sequence of positive ints (tf.estimator
  2.15 trains a linear model for `[]` and aborts the process for `[0]`: both refused);
* `check_dropout(dropout)`: None or a probability in [0, 1);
* `check_head(head)`: an `*Estimator`'s head has the `Head` interface.
"""

from __future__ import annotations

from typing import Any

__all__ = ["check_dropout", "check_head", "check_hidden_units", "classification_head",
           "regression_head"]


def classification_head(n_classes: Any, weight_column: Any, label_vocabulary: Any,
                        loss_reduction: Any) -> Any:
    """The head of a `*Classifier` (module doc)."""
    from trainexec.estimator_engine.heads import BinaryClassHead, MultiClassHead

    if n_classes == 2:
        return BinaryClassHead(weight_column=weight_column,
                               label_vocabulary=label_vocabulary,
                               loss_reduction=loss_reduction)
    return MultiClassHead(n_classes, weight_column=weight_column,
                          label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)


def regression_head(label_dimension: Any, weight_column: Any, loss_reduction: Any) -> Any:
    """The head of a `*Regressor` (module doc)."""
    from trainexec.estimator_engine.heads import RegressionHead

    return RegressionHead(label_dimension=label_dimension, weight_column=weight_column,
                          loss_reduction=loss_reduction)


def check_hidden_units(hidden_units: Any, argument: str = "hidden_units") -> list[int]:
    """`hidden_units` as a list of positive ints; ValueError otherwise."""
    if isinstance(hidden_units, (str, bytes)) or not hasattr(hidden_units, "__iter__"):
        raise ValueError(f"{argument} must be an iterable of positive ints (units per "
                         f"hidden layer, e.g. [64, 32]), given: {hidden_units!r}")
    units = list(hidden_units)
    if not units:
        raise ValueError(f"{argument} must not be empty: give the units of each hidden "
                         "layer, e.g. [64, 32] (for no hidden layer use a "
                         "LinearClassifier / LinearRegressor)")
    bad = [unit for unit in units
           if isinstance(unit, bool) or not isinstance(unit, int) or unit <= 0]
    if bad:
        raise ValueError(f"{argument} must hold positive ints, given: {units} "
                         f"({bad[0]!r} is not a positive number of units)")
    return [int(unit) for unit in units]


def check_dropout(dropout: Any, argument: str = "dropout") -> float | None:
    """`dropout` (None, or the probability of dropping a unit in [0, 1))."""
    if dropout is None:
        return None
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) \
            or not 0 <= dropout < 1:
        raise ValueError(f"{argument} must be None or a probability in [0, 1) of "
                         f"dropping a unit, given: {dropout!r}")
    return float(dropout)


def check_head(head: Any) -> Any:
    """`head` when it is a `Head`; ValueError naming what was given otherwise."""
    from trainexec.estimator_engine.heads import Head

    if not isinstance(head, Head):
        raise ValueError(f"head must be a Head (e.g. trainexec.estimator.BinaryClassHead"
                         f"()), given: {type(head).__name__}")
    return head
