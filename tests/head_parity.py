"""Heads side by side: one head of tf.estimator's and the same of trainexec's, given the
same logits, labels and features, build their `EstimatorSpec`s in fresh graphs; the
loss, every metric value, every prediction and the export signatures are compared.

`run_spec(make_head, api, mode, batches)` feeds each batch through placeholders (shapes
unknown but the last dimension, as an input_fn's batches give them) and returns plain
numbers; `assert_same(theirs, ours)` holds them to 1e-6.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

TOLERANCE = 1e-6


def _placeholder(tf: Any, value: Any) -> Any:
    if isinstance(value, tf.compat.v1.SparseTensorValue):
        return tf.compat.v1.sparse_placeholder(tf.as_dtype(value.values.dtype))
    value = np.asarray(value)
    shape = [None] * (value.ndim - 1) + [value.shape[-1]] if value.ndim > 1 else [None]
    return tf.compat.v1.placeholder(tf.as_dtype(value.dtype), shape)


def _as_tensors(tf: Any, value: Any, feeds: dict) -> Any:
    """Placeholders in the structure of `value` (dicts by key), fed from each batch."""
    if value is None:
        return None
    if isinstance(value, dict):
        return {key: _as_tensors(tf, item, feeds) for key, item in value.items()}
    placeholder = _placeholder(tf, value)
    feeds[id(placeholder)] = placeholder
    return placeholder


def _feed(structure: Any, batch: Any, into: dict) -> None:
    if structure is None:
        return
    if isinstance(structure, dict):
        for key, item in structure.items():
            _feed(item, batch[key], into)
        return
    into[structure] = batch


def run_spec(make_head: Callable[[Any], Any], api: Any, mode: str, batches: list,
             **spec_kwargs: Any) -> dict:
    """{"loss": [per batch], "metrics": {...} after every batch, "predictions":
    [per batch], "signatures": {name: kind}} of `make_head(api)`'s spec for `mode`,
    each batch a (features, logits, labels) triple."""
    import tensorflow as tf

    features0, logits0, labels0 = batches[0]
    with tf.Graph().as_default() as graph:
        feeds: dict = {}
        features = _as_tensors(tf, features0, feeds)
        logits = _as_tensors(tf, logits0, feeds)
        labels = _as_tensors(tf, labels0, feeds)
        head = make_head(api)
        if mode == "train":
            spec_kwargs.setdefault("train_op_fn", lambda loss: tf.no_op())
        spec = head.create_estimator_spec(features=features, mode=mode, logits=logits,
                                          labels=labels, **spec_kwargs)
        metrics = spec.eval_metric_ops or {}
        result: dict = {"loss": [], "predictions": [], "metrics": {},
                        "signatures": {key: type(value).__name__
                                       for key, value in (spec.export_outputs or {}).items()}}
        with tf.compat.v1.Session(graph=graph) as session:
            session.run([tf.compat.v1.global_variables_initializer(),
                         tf.compat.v1.local_variables_initializer(),
                         tf.compat.v1.tables_initializer()])
            for batch in batches:
                feed: dict = {}
                for structure, value in zip((features, logits, labels), batch):
                    _feed(structure, value, feed)
                fetches = {"predictions": spec.predictions,
                           "updates": {k: v[1] for k, v in metrics.items()}}
                if spec.loss is not None:
                    fetches["loss"] = spec.loss
                if spec.train_op is not None:
                    fetches["train"] = spec.train_op
                got = session.run(fetches, feed)
                if "loss" in got:
                    result["loss"].append(float(got["loss"]))
                result["predictions"].append(got["predictions"])
            result["metrics"] = {key: np.asarray(value) for key, value in
                                 session.run({k: v[0] for k, v in metrics.items()}).items()}
            if mode == "infer":
                result["outputs"] = _outputs(session, spec.export_outputs, feed)
    return result


def _outputs(session: Any, export_outputs: dict, feed: dict) -> dict:
    """Each signature's tensors, by signature and tensor name (the last batch)."""
    found = {}
    for name, output in export_outputs.items():
        tensors = {key: getattr(output, key) for key in ("scores", "classes", "value")
                   if getattr(output, key, None) is not None}
        tensors.update(getattr(output, "outputs", None) or {})
        found[name] = session.run(tensors, feed)
    return found


def _close(a: Any, b: Any, where: str) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"{where}: shape {a.shape} != {b.shape}"
    if a.dtype.kind in "SUO":
        assert (a == b).all(), f"{where}: {a} != {b}"
    else:
        np.testing.assert_allclose(a, b, rtol=TOLERANCE, atol=TOLERANCE, err_msg=where)


def _walk(a: Any, b: Any, where: str) -> None:
    if isinstance(a, dict):
        assert set(a) == set(b), f"{where}: keys {sorted(map(str, a))} != {sorted(map(str, b))}"
        for key in a:
            _walk(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, f"{where}[{i}]")
    else:
        _close(a, b, where)


def assert_same(theirs: dict, ours: dict) -> None:
    """Loss, metrics, predictions, signatures and their tensors agree (1e-6)."""
    assert ours["signatures"] == theirs["signatures"]
    _walk(theirs["loss"], ours["loss"], "loss")
    _walk(theirs["metrics"], ours["metrics"], "metrics")
    _walk(theirs["predictions"], ours["predictions"], "predictions")
    if "outputs" in theirs:
        _walk(theirs["outputs"], ours["outputs"], "export_outputs")


def batches_of(rng: np.random.RandomState, count: int, size: int, logits_dim: int,
               labels: Callable[[int], Any], weights: bool = False,
               weights_dim: int = 1) -> list:
    """`count` (features, logits, labels) batches of `size` examples; logits include
    exact zeros and large values, as real ones do."""
    made = []
    for _ in range(count):
        logits = rng.normal(scale=2.0, size=(size, logits_dim)).astype(np.float32)
        logits[0, 0], logits[-1, -1] = 0.0, 40.0
        features = {"x": rng.rand(size, 2).astype(np.float32)}
        if weights:
            features["w"] = (rng.rand(size, weights_dim) * 3).astype(np.float32)
        made.append((features, logits, labels(size)))
    return made
