"""Runs tf.estimator's own test files against `trainexec.estimator` and counts the result.

tensorflow/estimator's tests are the specification of what `trainexec.estimator` promises:
this script takes them from a checkout of that repository (they are not in the
`tensorflow-estimator` wheel, and none of their code is kept here), points their
`from tensorflow_estimator.python.estimator... import X` lines at a package of its own
that re-exports `trainexec.estimator`'s names (nothing else is changed), runs them with
pytest in a temporary directory, and prints how many of the tests of public behaviour
pass.

A test counts as one of public behaviour when every name it reads from those modules is
one tf.estimator 2.15 exports publicly (`PUBLIC_NAMES`: `tf.estimator`,
`tf.compat.v1.estimator` and their `experimental`, `export` and `inputs` modules), with
`TaskType` (RunConfig's task-type names) and `EstimatorV2` (what `tf.estimator.Estimator`
is) counted as public. A test that reaches a private function (`_write_dict_to_summary`,
`LOSS_METRIC_KEY`, `build_supervised_input_receiver_fn_from_input_fn`, ...), or that
replaces an attribute of a TensorFlow-internal module (`mock.patch.object(training,
'MonitoredTrainingSession')`, where `training` is `tensorflow.python.training.training`:
it tests how tf.estimator reached TensorFlow's insides), tests tf.estimator's insides,
not its contract: it runs, and is reported apart.

`--suite heads` runs the head test files (`head/*_test.py`, the sequential head's
left out: trainexec has no RNN heads) against `trainexec.estimator`'s heads. There the
metric and prediction keys (`MetricKeys`, `PredictionKeys`: their strings are the keys
of every head's metrics and predictions) and the test helpers of `head_utils`
(`_initialize_variables`, `_assert_simple_summaries`, `_assert_no_hooks`,
`_DEFAULT_SERVING_KEY`, served by the shim's own versions) count as public, and so do
the four tests that train a `dnn.DNNEstimatorV2` (trainexec's `DNNEstimator`) or call
`dnn_testing_utils.assert_close` (tf.estimator's testing utils, from the checkout).

`--suite canned` runs the v2 canned estimators' test files (`canned/baseline_test.py`,
`linear_test.py`, `dnn_test_fc_v2.py`, `dnn_linear_combined_test.py` and their
`*_estimator_test.py`) against `trainexec.estimator`'s canned estimators (the shim names
them as tf.estimator's modules do: `linear.LinearClassifierV2`, ...). Most of their tests
are methods of base classes in tf.estimator's testing utils (`linear_testing_utils.py`,
`dnn_testing_utils.py`), which run as they are, read from the checkout, their imports
pointed at the shim; a test counts as public when neither it nor the class's helpers
and module functions it reaches read a private name (`linear._linear_model_fn`, ...).

Each test gets `--timeout` seconds (default 300, SIGALRM in the run's conftest): a test
that hangs (one waiting on a cluster address that is never there) fails, named.

Usage:
    python scripts/upstream_estimator_tests.py --source /path/to/tensorflow/estimator \\
        [--suite estimator|heads|canned] [--ref v2.15.0] [--json results.json] [--keep DIR] \\
        [-- PYTEST_ARGS...]

`--source` is a git checkout (files are read at `--ref`) or a directory holding the
files. Run it with each line's interpreter: `.venv/bin/python` (TF 2.21; add
`TF_USE_LEGACY_KERAS=1` for tf_keras), `.venv-tf2.15/bin/python`.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

FILES = ("estimator_test.py", "model_fn_test.py", "run_config_test.py", "exporter_test.py",
         "export/export_test.py")
UPSTREAM_PACKAGE = "tensorflow_estimator.python.estimator"
SHIM = "te_upstream_shim"
# What tf.estimator 2.15 exports publicly (dir() of tf.estimator, tf.compat.v1.estimator
# and their experimental, export and inputs modules), plus TaskType and EstimatorV2.
PUBLIC_NAMES = frozenset("""
BaselineClassifier BaselineEstimator BaselineRegressor BestExporter BinaryClassHead
CheckpointSaverHook CheckpointSaverListener ClassificationOutput DNNClassifier
DNNEstimator DNNLinearCombinedClassifier DNNLinearCombinedEstimator
DNNLinearCombinedRegressor DNNRegressor Estimator EstimatorSpec EstimatorV2 EvalOutput
EvalSpec ExportOutput Exporter FeedFnHook FinalExporter FinalOpsHook GlobalStepWaiterHook
Head InMemoryEvaluatorHook KMeans LatestExporter LinearClassifier LinearEstimator
LinearRegressor LinearSDCA LoggingTensorHook LogisticRegressionHead ModeKeys
MultiClassHead MultiHead MultiLabelHead NanLossDuringTrainingError NanTensorHook
PoissonRegressionHead PredictOutput ProfilerHook RNNClassifier RNNEstimator RegressionHead
RegressionOutput RunConfig SecondOrStepTimer ServingInputReceiver SessionRunArgs
SessionRunContext SessionRunHook SessionRunValues StepCounterHook StopAtStepHook
SummarySaverHook TaskType TensorServingInputReceiver TrainSpec VocabInfo
WarmStartSettings add_metrics build_parsing_serving_input_receiver_fn
build_raw_serving_input_receiver_fn build_raw_supervised_input_receiver_fn call_logit_fn
classifier_parse_example_spec experimental export inputs make_early_stopping_hook
make_stop_at_checkpoint_step_hook numpy_input_fn pandas_input_fn
regressor_parse_example_spec stop_if_higher_hook stop_if_lower_hook
stop_if_no_decrease_hook stop_if_no_increase_hook train_and_evaluate
""".split())
# The upstream modules the tests import, each served by the shim with every public name.
SHIM_MODULES = ("estimator", "model_fn", "mode_keys", "run_config", "exporter", "training",
                "export/export", "export/export_lib", "export/export_output",
                "inputs/numpy_io", "inputs/pandas_io")
HEAD_FILES = tuple(f"head/{name}_test.py" for name in (
    "base_head", "binary_class_head", "multi_class_head", "multi_head", "multi_label_head",
    "regression_head"))
HEAD_SHIM_MODULES = ("canned/metric_keys", "canned/prediction_keys", "canned/dnn",
                     "canned/dnn_testing_utils", "head/base_head", "head/binary_class_head",
                     "head/head_utils", "head/multi_class_head", "head/multi_head",
                     "head/multi_label_head", "head/regression_head", "mode_keys",
                     "model_fn", "inputs/numpy_io", "estimator")
# Public in the head suite (module doc), and what needs the canned estimators.
HEAD_PUBLIC = frozenset({"MetricKeys", "PredictionKeys", "_initialize_variables",
                         "_assert_simple_summaries", "_assert_no_hooks",
                         "_DEFAULT_SERVING_KEY"})
CANNED_MODULES = frozenset({"dnn", "dnn_testing_utils"})
# The canned suite: the v2 canned estimators' test files; their base classes live in
# tf.estimator's own testing utils, which run as they are (read from the checkout, their
# imports pointed at the shim like the tests').
CANNED_FILES = tuple(f"canned/{name}.py" for name in (
    "baseline_test", "baseline_estimator_test", "linear_test", "linear_estimator_test",
    "dnn_test_fc_v2", "dnn_estimator_test", "dnn_linear_combined_test",
    "dnn_linear_combined_estimator_test"))
CANNED_HELPERS = ("canned/linear_testing_utils.py", "canned/dnn_testing_utils.py")
CANNED_SHIM_MODULES = ("estimator", "model_fn", "mode_keys", "export/export",
                       "inputs/numpy_io", "inputs/pandas_io", "canned/baseline",
                       "canned/linear", "canned/dnn", "canned/dnn_linear_combined",
                       "canned/metric_keys", "canned/prediction_keys", "head/base_head",
                       "head/binary_class_head", "head/multi_class_head",
                       "head/regression_head", "head/head_utils")
# tf.estimator's v2 class names (`tf.estimator.DNNClassifier` is `dnn.DNNClassifierV2`).
CANNED_V2 = ("BaselineClassifier", "BaselineRegressor", "BaselineEstimator",
             "LinearClassifier", "LinearRegressor", "LinearEstimator", "DNNClassifier",
             "DNNRegressor", "DNNEstimator", "DNNLinearCombinedClassifier",
             "DNNLinearCombinedRegressor", "DNNLinearCombinedEstimator")
CANNED_PUBLIC = frozenset(f"{name}V2" for name in CANNED_V2)
_MODULE_NAMES = frozenset(m.rsplit("/", 1)[-1] for m in
                          SHIM_MODULES + HEAD_SHIM_MODULES + CANNED_SHIM_MODULES)
_SHIM_BODY = '''"""Re-exports trainexec.estimator's names where tf.estimator's tests import them."""
import trainexec.estimator as _estimator
from trainexec.estimator import *  # noqa: F401,F403
from trainexec.estimator.export import *  # noqa: F401,F403

try:  # tf.estimator.experimental's names, where the engine has them
    from trainexec.estimator.experimental import *  # noqa: F401,F403
except ImportError:
    pass
try:
    from trainexec.estimator.inputs import *  # noqa: F401,F403
except ImportError:
    pass
EstimatorV2 = _estimator.Estimator
TaskType = _estimator.RunConfig.TaskType if hasattr(_estimator.RunConfig, "TaskType") \\
    else getattr(_estimator, "TaskType", None)
export = _estimator.export
'''

_HEAD_SHIM_EXTRA = '''
from trainexec.estimator_engine.heads.keys import MetricKeys, PredictionKeys  # noqa: F401
from trainexec.estimator_engine.model_spec import EstimatorSpec  # noqa: F401
'''

# head_utils' test helpers, trainexec's own versions (what the tests call them for).
_HEAD_UTILS = '''
import tensorflow as _tf

_DEFAULT_SERVING_KEY = "serving_default"


def _initialize_variables(test_case, scaffold):
    """Finalizes `scaffold` and runs its initialization in the test's session."""
    scaffold.finalize()
    test_case.assertIsNone(scaffold.init_feed_dict)
    test_case.assertIsNone(scaffold.init_fn)
    for op in (scaffold.init_op, scaffold.local_init_op):
        op.run()
    for ready in (scaffold.ready_for_local_init_op, scaffold.ready_op):
        ready.eval()
    test_case.assertIsNotNone(scaffold.saver)


def _assert_simple_summaries(test_case, expected_summaries, summary_str, tol=1e-6):
    """The serialized Summary's scalar values, by tag, are `expected_summaries`."""
    summary = _tf.compat.v1.summary.Summary()
    summary.ParseFromString(summary_str)
    got = {value.tag: value.simple_value for value in summary.value}
    test_case.assertAllClose(expected_summaries, got, rtol=tol, atol=tol)


def _assert_no_hooks(test_case, spec):
    """The spec has no training hooks."""
    test_case.assertAllEqual([], spec.training_chief_hooks)
    test_case.assertAllEqual([], spec.training_hooks)
'''


def read_sources(source: str, ref: str, files: tuple[str, ...] = FILES) -> dict[str, str]:
    """The test files' text, from a git checkout at `ref` or a plain directory."""
    texts = {}
    git = os.path.isdir(os.path.join(source, ".git")) or source.endswith(".git") or \
        os.path.exists(os.path.join(source, "HEAD"))
    for name in files:
        upstream = f"tensorflow_estimator/python/estimator/{name}"
        if git:
            texts[name] = subprocess.run(["git", "-C", source, "show", f"{ref}:{upstream}"],
                                         check=True, capture_output=True, text=True).stdout
        else:
            with open(os.path.join(source, upstream)) as f:
                texts[name] = f.read()
    return texts


def point_imports(text: str) -> str:
    """`from tensorflow_estimator.python.estimator... import X` -> the shim's same path;
    only import lines change."""
    lines = []
    for line in text.splitlines(keepends=True):
        if re.match(r"\s*(from|import)\s+tensorflow_estimator\b", line):
            line = line.replace(UPSTREAM_PACKAGE, f"{SHIM}.python.estimator")
        lines.append(line)
    return "".join(lines)


_TIMEOUT_CONFTEST = '''"""Each test of this run gets TIMEOUT seconds (SIGALRM), then fails, named."""
import signal

import pytest

TIMEOUT = {timeout}


@pytest.fixture(autouse=True)
def _time_limit(request):
    def expired(signum, frame):
        raise TimeoutError(f"{{request.node.nodeid}} ran past {{TIMEOUT}} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(TIMEOUT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
'''


_REFERENCE_BODY = '''"""tf.estimator's own module, for a reference run of its tests."""
import importlib
import sys

sys.modules[__name__] = importlib.import_module("{upstream}.{module}")
'''


def _shim_text(module: str, suite: str) -> str:
    if suite == "canned":
        extra = "".join(f"{name}V2 = _estimator.{name}\n" for name in CANNED_V2)
        name = module.rsplit("/", 1)[-1]
        return (_SHIM_BODY + _HEAD_SHIM_EXTRA + extra
                + (_HEAD_UTILS if name == "head_utils" else ""))
    if suite != "heads":
        return _SHIM_BODY
    name = module.rsplit("/", 1)[-1]
    if name == "dnn":  # trainexec's canned estimators, under tf.estimator's v2 names
        return _shim_text(module, "canned")
    if name in CANNED_MODULES:  # tf.estimator's own testing utils, written in `main`
        return '"""tf.estimator testing utils: replaced by the checkout copy."""\n'
    return _SHIM_BODY + _HEAD_SHIM_EXTRA + (_HEAD_UTILS if name == "head_utils" else "")


def write_shim(root: str, against: str = "trainexec", suite: str = "estimator") -> None:
    """The shim package: trainexec.estimator's names under every upstream module name,
    or (`against="tf.estimator"`, TF 2.15) tf.estimator's own modules, for a reference
    count made the same way."""
    modules = {"heads": HEAD_SHIM_MODULES, "canned": CANNED_SHIM_MODULES}.get(
        suite, SHIM_MODULES)
    for module in modules:
        path = os.path.join(root, SHIM, "python", "estimator", module + ".py")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(_shim_text(module, suite) if against == "trainexec"
                    else _REFERENCE_BODY.format(upstream=UPSTREAM_PACKAGE,
                                                module=module.replace("/", ".")))
    for directory, _, names in os.walk(os.path.join(root, SHIM)):
        if "__init__.py" not in names:
            open(os.path.join(directory, "__init__.py"), "w").close()


def private_names(text: str, public: frozenset = PUBLIC_NAMES) -> dict[str, list[str]]:
    """{Class::test: names it reads from the estimator modules that are not public
    (`public`), `patches tensorflow.python's X` for each TensorFlow-internal module it
    patches, and `canned: X` for each name of a canned estimator module it reads}."""
    tree = ast.parse(text)
    aliases, internal, canned = set(), set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "tensorflow_estimator"):
            for alias in node.names:  # the modules imported (not names like ModeKeys)
                if alias.name in _MODULE_NAMES:
                    aliases.add(alias.asname or alias.name)
                if alias.name in CANNED_MODULES:
                    canned.add(alias.asname or alias.name)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "tensorflow.python"):
            internal.update(alias.asname or alias.name for alias in node.names)
    found = {}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for fn in cls.body:
            if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("test")):
                continue
            read = [(node.value.id, node.attr) for node in ast.walk(fn)
                    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases]
            used = {attr for module, attr in read if module not in canned}
            from_canned = {f"canned: {attr}" for module, attr in read if module in canned}
            patched = {f"patches tensorflow.python's {node.args[0].id}"
                       for node in ast.walk(fn) if isinstance(node, ast.Call)
                       and isinstance(node.func, ast.Attribute)
                       and node.func.attr == "object" and node.args
                       and isinstance(node.args[0], ast.Name)
                       and node.args[0].id in internal}
            found[f"{cls.name}::{fn.name}"] = sorted(
                {u for u in used if u not in public} | patched | from_canned)
    return found


class _Module:
    """One parsed file: the estimator modules it imports (by local name), its classes
    and module-level functions, the TensorFlow-internal names it imports."""

    def __init__(self, text: str) -> None:
        self.tree = ast.parse(text)
        self.aliases: dict[str, str] = {}  # local name -> module name (linear, dnn, ...)
        self.internal: set[str] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "tensorflow_estimator"):
                for alias in node.names:
                    self.aliases[alias.asname or alias.name] = alias.name
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "tensorflow.python"):
                self.internal.update(alias.asname or alias.name for alias in node.names)
        self.classes = {n.name: n for n in self.tree.body if isinstance(n, ast.ClassDef)}
        self.functions = {n.name: n for n in self.tree.body if isinstance(n, ast.FunctionDef)}


def inherited_private_names(texts: dict[str, str], helpers: dict[str, str],
                            public: frozenset) -> dict[str, list[str]]:
    """`private_names` for test classes whose tests live in base classes of tf.estimator's
    testing utils (`helpers`): each test, found through its class's bases, with what it
    reads that is not public, and what the module-level helpers it calls read (to a
    fixed point)."""
    modules = {os.path.basename(n)[:-3]: _Module(t) for n, t in {**helpers, **texts}.items()}
    memo: dict[tuple[str, str], set[str]] = {}

    def reads(module: _Module, where: str, fn: ast.AST, seen: set,
              methods: dict | None = None) -> set[str]:
        found = set()
        for node in ast.walk(fn):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id == "self" and methods and node.attr in methods
                    and ("self", node.attr) not in seen):
                owner_name, method = methods[node.attr]  # a helper method of the class
                found |= reads(modules[owner_name], owner_name, method,
                               seen | {("self", node.attr)}, methods)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                owner = module.aliases.get(node.value.id)
                if owner in modules and owner != where:  # a testing utils' helper
                    helper = modules[owner]
                    if node.attr in helper.functions:
                        found |= function(owner, node.attr, seen)
                elif owner in _MODULE_NAMES and node.attr not in public:
                    found.add(node.attr)
            elif isinstance(node, ast.Name) and node.id in module.functions:
                found |= function(where, node.id, seen)
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "object" and node.args
                    and isinstance(node.args[0], ast.Name)
                    and node.args[0].id in module.internal):
                found.add(f"patches tensorflow.python's {node.args[0].id}")
        return found

    def function(where: str, name: str, seen: set) -> set[str]:
        key = (where, name)
        if key in memo:
            return memo[key]
        if key in seen:
            return set()
        module = modules[where]
        memo[key] = reads(module, where, module.functions[name], seen | {key})
        return memo[key]

    def methods_of(where: str, cls: ast.ClassDef) -> dict[str, tuple[str, ast.AST]]:
        found: dict[str, tuple[str, ast.AST]] = {}
        for base in reversed(cls.bases):  # the first base's methods win, as in Python
            if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name):
                owner = modules[where].aliases.get(base.value.id)
                if owner in modules and base.attr in modules[owner].classes:
                    found.update(methods_of(owner, modules[owner].classes[base.attr]))
            elif isinstance(base, ast.Name) and base.id in modules[where].classes:
                found.update(methods_of(where, modules[where].classes[base.id]))
        found.update({fn.name: (where, fn) for fn in cls.body
                      if isinstance(fn, ast.FunctionDef)})
        return found

    result = {}
    for name in texts:
        where = os.path.basename(name)[:-3]
        for cls in modules[where].classes.values():
            methods = methods_of(where, cls)
            helpers_of = {n: m for n, m in methods.items() if not n.startswith("test")}
            for test, (owner, fn) in methods.items():
                if not test.startswith("test"):
                    continue
                private = reads(modules[owner], owner, fn, set(), helpers_of)
                # the class's own __init__/setUp: how it builds the estimator under test
                for own in cls.body:
                    if isinstance(own, ast.FunctionDef) and own.name in ("__init__",
                                                                          "setUp"):
                        private |= reads(modules[where], where, own, set(), helpers_of)
                result[f"{cls.name}::{test}"] = sorted(private)
    return result


def outcomes(junit: str) -> dict[str, tuple[str, str]]:
    """{file::Class::test: (passed/failed/skipped, first line of why)} from pytest's XML."""
    found = {}
    for case in ElementTree.parse(junit).iter("testcase"):
        module = case.get("classname", "").split(".")
        key = "::".join([module[-2] + ".py" if len(module) > 1 else "", module[-1],
                         case.get("name", "")])
        state, why = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                state, why = "failed", (child.get("message") or "").splitlines()[:1]
                why = why[0] if why else child.tag
            elif child.tag == "skipped":
                state, why = "skipped", child.get("message") or ""
        key = re.sub(r"\[.*\]$", "", key)  # parametrized: one row per method, worst wins
        if found.get(key, ("passed",))[0] != "failed":
            found[key] = (state, why)
    return found


def _parameterized(results: dict[str, tuple[str, str]], key: str,
                   methods: set[str]) -> tuple[str, str]:
    """The outcome of an absl-parameterized test (`test_x` runs as `test_x0`,
    `test_x_basic`, ...): its cases that no other method of the class names exactly,
    the worst of them; ("not run", "") if none ran."""
    cases = [state for name, state in results.items() if name.startswith(key)
             and name != key and name not in methods
             and not any(m != key and m.startswith(key) and name.startswith(m)
                         for m in methods)]
    if not cases:
        return ("not run", "")
    failed = [case for case in cases if case[0] == "failed"]
    return failed[0] if failed else cases[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", required=True, help="a tensorflow/estimator checkout")
    parser.add_argument("--ref", default="v2.15.0")
    parser.add_argument("--suite", choices=("estimator", "heads", "canned"),
                        default="estimator", help="which test files: the Estimator's "
                        "(default), the heads' or the v2 canned estimators'")
    parser.add_argument("--json", help="write every test's outcome here")
    parser.add_argument("--keep", help="run in this directory (kept) instead of a temporary one")
    parser.add_argument("--against", choices=("trainexec", "tf.estimator"),
                        default="trainexec", help="whose Estimator the tests run against "
                        "(tf.estimator: TensorFlow 2.15 only, a reference count)")
    parser.add_argument("--timeout", type=int, default=300,
                        help="seconds each test may take (default 300)")
    parser.add_argument("--list", choices=("failed", "all"), default="failed",
                        help="which public tests to list (default: the failing ones)")
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args(argv)
    heads, canned_suite = args.suite == "heads", args.suite == "canned"
    texts = read_sources(args.source, args.ref, HEAD_FILES if heads else
                         CANNED_FILES if canned_suite else FILES)
    public = (PUBLIC_NAMES | HEAD_PUBLIC if heads else
              PUBLIC_NAMES | HEAD_PUBLIC | CANNED_PUBLIC if canned_suite else PUBLIC_NAMES)
    helpers = read_sources(args.source, args.ref, CANNED_HELPERS if canned_suite else
                           ("canned/dnn_testing_utils.py",) if heads else ())
    root = args.keep or tempfile.mkdtemp(prefix="upstream-estimator-")
    os.makedirs(os.path.join(root, "tests"), exist_ok=True)
    write_shim(root, args.against, args.suite)
    for name, text in helpers.items():  # tf.estimator's own testing utils, imports pointed
        with open(os.path.join(root, SHIM, "python", "estimator", name), "w") as f:
            f.write(point_imports(text))
    with open(os.path.join(root, "tests", "conftest.py"), "w") as f:
        f.write(_TIMEOUT_CONFTEST.format(timeout=args.timeout))
    for name, text in texts.items():
        with open(os.path.join(root, "tests", os.path.basename(name)), "w") as f:
            f.write(point_imports(text))
    junit = os.path.join(root, "junit.xml")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [root, os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      os.environ.get("PYTHONPATH")])))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "--rootdir", root, "-o", "addopts=", "-o", "python_files=*.py",
                    "--continue-on-collection-errors",
                    f"--junitxml={junit}",
                    os.path.join(root, "tests"), *args.pytest_args], cwd=root, env=env)
    results = outcomes(junit)
    rows = []
    for name, text in texts.items():
        base = os.path.basename(name)
        found = (inherited_private_names({name: text}, helpers, public) if canned_suite
                 else private_names(text, public))
        for test, private in found.items():
            state, why = results.get(f"{base}::{test}") or _parameterized(
                results, f"{base}::{test}", {f"{base}::{t}" for t in found})
            # What a head test reads of the canned estimators' modules: their v2 classes
            # and tf.estimator's testing utils are public there, as in the canned suite.
            private = [p for p in private if not (p.startswith("canned: ") and (
                p[len("canned: "):] in CANNED_PUBLIC or p == "canned: assert_close"))]
            needs_canned = bool(private) and all(p.startswith("canned: ") for p in private)
            rows.append({"test": f"{name}::{test}", "public": not private,
                         "needs_canned": needs_canned, "private_names": private,
                         "outcome": state, "why": why})
    canned = [r for r in rows if r["needs_canned"]]
    public = [r for r in rows if r["public"]]
    passed = [r for r in public if r["outcome"] == "passed"]
    skipped = [r for r in public if r["outcome"] == "skipped"]
    for row in public:
        if args.list == "all" or row["outcome"] not in ("passed", "skipped"):
            print(f"{row['outcome']:8} {row['test']}  {row['why'][:160]}")
    private = [r for r in rows if not r["public"] and not r["needs_canned"]]
    print(f"against {args.against}: public-contract tests: {len(passed) + len(skipped)} of "
          f"{len(public)} pass ({len(passed)} passed, {len(skipped)} skipped by their own "
          f"marks, as they are on tf.estimator: run_v1_only); tests of private functions: "
          f"{sum(r['outcome'] == 'passed' for r in private)} of {len(private)} pass (not "
          f"counted)" + (f"; tests needing canned estimators: "
                         f"{sum(r['outcome'] == 'passed' for r in canned)} of {len(canned)} "
                         f"pass (not counted)" if canned else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if len(passed) + len(skipped) == len(public) else 1


if __name__ == "__main__":
    sys.exit(main())
