"""Tests mirror the package: each module of `trainexec/` has its own test file, or a line
in `MIRROR_EXEMPT` saying where it is tested instead.

The naming rule: the module's path under `trainexec/`, `/` turned into `_`, `.py`
dropped, `test_` in front, in `tests/` or `tests/cluster/` (the tests that start
processes):

* `trainexec/launch/policy.py` -> `tests/test_launch_policy.py`;
* a nested package's module, `trainexec/keras/compat/optimizers.py` ->
  `tests/test_keras_compat_optimizers.py`;
* a top-level module, `trainexec/clock.py` -> `tests/test_clock.py`;
* a package's `__init__.py` is the package: `trainexec/keras/compat/__init__.py` ->
  `tests/test_keras_compat.py` (`trainexec/__init__.py` -> `tests/test_trainexec.py`);
* `__main__.py` likewise: `trainexec/testing/gcs/__main__.py` ->
  `tests/test_testing_gcs___main__.py` (in practice: exempt, naming where the command
  is run).

An exemption's reason names where the module is tested, as `tests/<file>.py::<test>`
(every one named must exist); an exemption whose module has a mirror now, or whose
module is gone, fails the test, so the list only shrinks as mirrors are written.
"""

import pathlib
import re
import pytest

pytestmark = pytest.mark.any_line

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "trainexec"
TEST_DIRS = (ROOT / "tests", ROOT / "tests" / "cluster")
_WHERE = re.compile(r"(tests/[\w/]+\.py)::(\w+)")

# {module: where it is tested instead of a mirror file}. Most are tested through the
# module that uses them, or in a test file named after the behaviour (the fault
# matrices, the trainers' contracts) rather than the module.
MIRROR_EXEMPT = {
    # --- the package, its entry point and shared names
    "trainexec/__init__.py":
        "the public names, lazily imported: tests/test_public_api.py::"
        "test_public_names_resolve_without_tensorflow_estimator",
    "trainexec/__main__.py":
        "`python -m trainexec` runs in tests/test_cli.py::test_cli_tfconfig_shows_role "
        "and tests/test_cli_parser.py::test_no_command_prints_the_full_help",
    "trainexec/errors.py":
        "ConfigError is what every refusal raises, e.g. tests/test_cluster_parsing.py::"
        "test_malformed_tf_config_is_explained",
    "trainexec/task_types.py":
        "the task type names, read by every cluster test, e.g. tests/test_cluster_config.py::"
        "test_worker_facts",
    "trainexec/exporters.py":
        "re-exports of the exporters: tests/test_docs.py::test_api_reference_has_every_exporter"
        " and tests/test_keras_evaluate_exporters.py::"
        "test_latest_exporter_keeps_newest_and_exports_load",
    # --- cli
    "trainexec/cli/render.py":
        "`trainexec render` in tests/test_jobs_render.py::"
        "test_every_role_combination_renders_a_valid_tfjob_with_what_was_asked and "
        "tests/test_jobs_sbatch.py::test_the_script_says_why_each_line_is_there",
    "trainexec/cli/slurm.py":
        "`trainexec slurm-exec` / `slurm-verdict` in tests/cluster/test_slurm.py::"
        "test_srun_gives_every_task_its_role_and_its_own_nodes_address and "
        "tests/test_cli_parser.py::test_every_example_parses",
    # --- cluster, contract
    "trainexec/cluster/__init__.py":
        "re-exports: tests/test_cluster_config.py::test_worker_facts",
    "trainexec/contract/__init__.py":
        "re-exports: tests/test_docs.py::test_troubleshooting_has_every_exit_code",
    "trainexec/contract/slurm_env.py":
        "the variables the batch script exports: tests/test_jobs_sbatch.py::"
        "test_the_script_says_why_each_line_is_there",
    # --- estimator (the public face), estimator_engine, estimator_trainer (its compat
    # package: the inventory test and the table test)
    "trainexec/estimator/__init__.py":
        "the Estimator line's public names: tests/test_public_api.py::"
        "test_public_names_resolve_without_tensorflow_estimator",
    "trainexec/estimator_engine/canned/__init__.py":
        "re-exports of the canned estimators: tests/test_estimator_engine_canned_dnn.py::"
        "test_a_dnn_classifier_writes_tf_estimators_names_and_trains",
    "trainexec/estimator_trainer/compat/estimator_internals.py":
        "tests/test_estimator_trainer_compat.py::test_every_inventoried_attribute_is_still_there; "
        "its use in tests/test_estimator_trainer_persistent_eval.py::"
        "test_the_graph_is_built_once_and_does_not_grow",
    "trainexec/estimator_trainer/compat/exporters.py":
        "tests/test_estimator_trainer_compat.py::test_every_inventoried_attribute_is_still_there; "
        "tests/test_internals.py::test_each_compat_modules_table_matches_its_internals",
    "trainexec/estimator_trainer/compat/run_config.py":
        "tests/test_estimator_trainer_compat.py::test_every_inventoried_attribute_is_still_there; "
        "its use in tests/test_executor.py::test_distribute_coordinator_is_refused_clearly",
    "trainexec/estimator_trainer/compat/session_manager.py":
        "tests/test_estimator_trainer_compat.py::test_every_inventoried_attribute_is_still_there; "
        "its use in tests/test_estimator_trainer_readiness.py::"
        "test_inside_the_block_new_session_managers_recheck_every_secs",
    "trainexec/estimator_engine/__init__.py":
        "tests/test_estimator_engine_estimator.py::test_the_engine_uses_public_tensorflow_only",
    "trainexec/estimator_engine/heads/__init__.py":
        "the heads' package re-exports, through trainexec.estimator: "
        "tests/test_estimator_engine_heads_base.py::"
        "test_a_head_trains_evaluates_predicts_and_exports",
    "trainexec/estimator_engine/eval_summaries.py":
        "through the native Estimator's evaluate: tests/test_estimator_engine_estimator.py::"
        "test_train_evaluate_predict_export_round_trip",
    "trainexec/estimator_engine/evaluation.py":
        "through the native Estimator: tests/test_estimator_engine_estimator.py::"
        "test_evaluate_a_named_evaluation_and_a_given_checkpoint",
    "trainexec/estimator_engine/graph.py":
        "through the native Estimator: tests/test_estimator_engine_contract.py::"
        "test_a_scaffold_with_its_own_local_init_op",
    "trainexec/estimator_engine/hook_runner.py":
        "through the native Estimator: tests/test_estimator_engine_estimator.py::"
        "test_arguments_and_hooks_reach_the_users_functions",
    "trainexec/estimator_engine/saved_model.py":
        "through export_saved_model: tests/test_estimator_engine_export.py::"
        "test_a_raw_receiver_a_single_output_and_receiver_alternatives",
    "trainexec/estimator_engine/session_hooks.py":
        "through the native Estimator's training: tests/test_estimator_engine_contract.py::"
        "test_the_final_checkpoint_is_saved_before_a_user_hooks_end",
    "trainexec/estimator_engine/training.py":
        "through the native Estimator's train: tests/test_estimator_engine_estimator.py::"
        "test_train_resumes_from_its_checkpoint_and_skips_a_reached_max_steps",
    "trainexec/keras/keepalive.py":
        "re-exports under the module's first name: tests/test_cluster_keepalive.py::"
        "test_the_modules_first_name_still_imports",
    "trainexec/estimator/export.py":
        "re-exports: tests/test_estimator_engine_export.py::"
        "test_classify_and_regress_signatures_over_parsed_examples",
    "trainexec/estimator/experimental.py":
        "re-exports: tests/test_estimator_engine_logit_fn.py::"
        "test_only_the_arguments_a_logit_fn_names_are_passed and "
        "tests/test_estimator_engine_serving_input.py::"
        "test_raw_supervised_receivers_feed_features_and_labels",
    "trainexec/estimator/inputs.py":
        "re-exports: tests/test_estimator_engine_inputs.py::"
        "test_it_is_tf_estimators_inputs_module_and_loads_no_tensorflow",
    "trainexec/estimator_trainer/__init__.py":
        "a docstring: its modules have their tests, e.g. tests/test_estimator_trainer_trainer.py::"
        "test_local_drop_in_gives_the_same_metrics",
    "trainexec/estimator_trainer/evaluate_on_save.py":
        "an Estimator chief evaluating its saves: tests/test_executor.py::"
        "test_an_estimator_chief_whose_plan_evaluates_evaluates_its_saves",
    "trainexec/estimator_trainer/target.py":
        "tests/test_estimator_trainer_persistent_eval.py::"
        "test_same_metrics_and_summaries_as_estimator_evaluate and "
        "tests/test_estimator_engine_contract.py::"
        "test_an_input_of_tensors_is_evaluated_per_checkpoint_not_on_a_kept_graph",
    # --- evaluation
    "trainexec/evaluation/__init__.py":
        "re-exports: tests/test_evaluation_loop.py::test_decide",
    "trainexec/evaluation/evaluator_role.py":
        "the evaluator's role: tests/test_tasks_roles.py::test_every_role_takes_its_steps_in_order",
    "trainexec/evaluation/target.py":
        "through its trainers' targets: tests/test_estimator_trainer_persistent_eval.py::"
        "test_a_rotated_out_checkpoint_disappeared and tests/test_fault_matrix_evaluator.py::"
        "test_keras_target_calls_a_checkpoint_rotated_away_disappeared",
    # --- examples (the demo jobs)
    "trainexec/examples/__init__.py":
        "tests/test_examples_keras_job.py::test_the_demo_job_trains_evaluates_and_exports_locally",
    "trainexec/examples/arguments.py":
        "the demos' flags: tests/test_examples_keras_job.py::"
        "test_the_demo_job_trains_evaluates_and_exports_locally",
    "trainexec/examples/blobs.py":
        "the demos' data: tests/test_examples_keras_job.py::"
        "test_the_demo_job_trains_evaluates_and_exports_locally",
    "trainexec/examples/estimator_job.py":
        "tests/cluster/test_estimator_engine_clusters.py::"
        "test_native_estimator_cluster_trains_evaluates_and_exports_once",
    "trainexec/examples/report.py":
        "the demos' closing line: tests/test_examples_keras_job.py::"
        "test_the_demo_job_trains_evaluates_and_exports_locally",
    # --- jobs (rendered and read back through `trainexec render` / `launch --from`)
    "trainexec/jobs/__init__.py":
        "re-exports: tests/test_jobs_shape.py::test_from_counts_is_the_launchers_shape_in_tf_config_order",
    "trainexec/jobs/tfjob.py":
        "tests/test_jobs_render.py::test_render_tfjob_is_plain_data_from_the_shape",
    # --- keras (its compat package: the inventory test and the table test)
    "trainexec/keras/__init__.py":
        "the Keras line's public names: tests/test_public_api.py::"
        "test_public_names_resolve_without_tensorflow_estimator",
    "trainexec/keras/compat/coordinator.py":
        "tests/test_keras_compat.py::"
        "test_every_attribute_inventoried_for_this_line_is_still_there; its use in "
        "tests/test_keras_faults_coordinator_release.py::"
        "test_an_idle_coordinator_is_stopped_at_once",
    "trainexec/keras/compat/fit_loop.py":
        "tests/test_keras_compat.py::"
        "test_every_attribute_inventoried_for_this_line_is_still_there; its use in "
        "tests/test_keras_fit_distributed_fit.py::"
        "test_under_ps_batch_callbacks_get_the_remote_logs_or_one_fetch_for_all_that_need_values",
    "trainexec/keras/compat/optimizers.py":
        "tests/test_keras_compat.py::"
        "test_every_attribute_inventoried_for_this_line_is_still_there; its use in "
        "tests/test_keras_fit_progress.py::"
        "test_reports_every_n_steps_and_at_max_steps_with_rate_and_time_left",
    "trainexec/keras/compat/preemption.py":
        "tests/test_keras_compat.py::"
        "test_every_attribute_inventoried_for_this_line_is_still_there; its use in "
        "tests/test_keras_faults_preemption.py::"
        "test_a_sigtermed_local_run_saves_exits_143_and_resumes_there",
    "trainexec/keras/compat/variables.py":
        "tests/test_keras_fit_distributed_fit.py::"
        "test_keras_3_variable_updates_are_single_ops_inside_atomic_updates_only and "
        "tests/test_keras_fit_distributed_fit.py::"
        "test_inside_a_stateless_scope_an_update_keeps_keras_own_even_within_atomic_updates",
    "trainexec/keras/evaluate/__init__.py":
        "a docstring, no code; evaluating is tested through its modules, e.g. "
        "tests/test_keras_evaluate_sidecar.py::test_evaluates_every_checkpoint_style",
    "trainexec/keras/fit/__init__.py":
        "a docstring, no code; fitting is tested through its modules, e.g. "
        "tests/test_keras_trainer.py::test_local_run_resumes_at_its_last_saved_step",
    "trainexec/keras/fit/callbacks.py":
        "tests/test_keras_evaluate_sidecar.py::test_training_complete_callback_stops_the_evaluator",
    "trainexec/keras/fit/training.py":
        "tests/test_keras_trainer.py::test_segments and tests/test_keras_trainer.py::"
        "test_local_run_resumes_at_its_last_saved_step",
    # --- launch
    "trainexec/launch/__init__.py":
        "the launcher's public names: tests/test_public_api.py::"
        "test_public_names_resolve_without_tensorflow_estimator",
    # --- records
    "trainexec/records/__init__.py":
        "re-exports: tests/test_records_liveness.py::test_this_process_is_alive_and_itself",
    # --- tasks (the role sequence)
    "trainexec/tasks/__init__.py":
        "tests/test_tasks_roles.py::test_every_role_takes_its_steps_in_order",
    "trainexec/tasks/training.py":
        "tests/test_tasks_roles.py::test_every_role_takes_its_steps_in_order and "
        "tests/test_executor.py::test_worker_waits_its_delay_then_trains",
    # --- testing (the test beds: run by the cluster tests that use them)
    "trainexec/testing/__init__.py":
        "re-exports of the beds: tests/cluster/test_multihost_bed.py::"
        "test_hosts_reach_each_other_by_service_name_and_nothing_else",
    "trainexec/testing/bridge.py":
        "the beds' network: tests/cluster/test_multihost_bed.py::"
        "test_hosts_reach_each_other_by_service_name_and_nothing_else",
    "trainexec/testing/chaos/__main__.py":
        "two lines running cli.main, tested in tests/test_testing_chaos.py::"
        "test_the_cli_prints_the_schedules_it_would_run",
    "trainexec/testing/chaos/cli.py":
        "tests/test_testing_chaos.py::test_the_cli_prints_the_schedules_it_would_run",
    "trainexec/testing/chaos/runner.py":
        "run_schedule on the multi-host bed: tests/cluster/test_chaos.py::"
        "test_chaos_schedules_keep_every_promise",
    "trainexec/testing/gcs/__main__.py":
        "`python -m trainexec.testing.gcs`, started by GcsEmulator: "
        "tests/cluster/test_testing_gcs.py::test_client_settings",
    "trainexec/testing/gcs/emulator.py":
        "tests/cluster/test_testing_gcs.py::test_create_if_absent_has_one_winner",
    "trainexec/testing/gcs/server.py":
        "the emulator process: tests/cluster/test_testing_gcs.py::"
        "test_generation_preconditions and tests/cluster/test_testing_gcs.py::"
        "test_tensorflow_on_gs",
    "trainexec/testing/gcs/tls.py":
        "the emulator's certificates: tests/cluster/test_testing_gcs.py::test_client_settings",
    "trainexec/testing/netns.py":
        "tests/cluster/test_multihost_bed.py::"
        "test_hosts_reach_each_other_by_service_name_and_nothing_else",
    "trainexec/testing/slurm.py":
        "the Slurm bed: tests/cluster/test_slurm.py::"
        "test_srun_gives_every_task_its_role_and_its_own_nodes_address",
    "trainexec/testing/storage.py":
        "tests/cluster/test_multihost_bed.py::"
        "test_a_file_one_host_writes_shows_on_another_when_the_cache_allows",
}


def mirror_name(module: pathlib.Path) -> str:
    """`test_<path under trainexec/, "/" as "_">.py`; a package's `__init__.py` is the
    package."""
    parts = list(module.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return "test_" + "_".join(parts or ["trainexec"]) + ".py"


def has_mirror(module: pathlib.Path) -> bool:
    return any((folder / mirror_name(module)).is_file() for folder in TEST_DIRS)


def modules() -> list[str]:
    return sorted(path.relative_to(ROOT).as_posix() for path in PACKAGE.rglob("*.py"))


def test_the_naming_rule():
    assert mirror_name(PACKAGE / "clock.py") == "test_clock.py"
    assert mirror_name(PACKAGE / "launch" / "policy.py") == "test_launch_policy.py"
    assert (mirror_name(PACKAGE / "keras" / "compat" / "optimizers.py")
            == "test_keras_compat_optimizers.py")
    assert mirror_name(PACKAGE / "keras" / "compat" / "__init__.py") == "test_keras_compat.py"
    assert mirror_name(PACKAGE / "__init__.py") == "test_trainexec.py"


def test_every_module_has_a_mirror_or_an_exemption():
    missing = [module for module in modules()
               if not has_mirror(ROOT / module) and module not in MIRROR_EXEMPT]
    assert missing == [], (
        "write tests/" + (mirror_name(ROOT / missing[0]) if missing else "") + " (or list "
        "the module in MIRROR_EXEMPT, naming the tests/<file>.py::<test> that tests it)")


def test_no_exemption_is_stale():
    known = set(modules())
    gone = sorted(module for module in MIRROR_EXEMPT if module not in known)
    mirrored = sorted(module for module in MIRROR_EXEMPT
                      if module in known and has_mirror(ROOT / module))
    assert gone == [], "exempt modules that no longer exist"
    assert mirrored == [], "exempt modules that now have their mirror: drop the exemption"


def test_every_exemption_names_tests_that_exist():
    problems = []
    for module, reason in MIRROR_EXEMPT.items():
        places = _WHERE.findall(reason)
        if not places:
            problems.append(f"{module}: the reason names no tests/<file>.py::<test>")
        for path, name in places:
            test_file = ROOT / path
            if not test_file.is_file():
                problems.append(f"{module}: {path} does not exist")
            elif not re.search(rf"^\s*def {name}\(", test_file.read_text(encoding="utf-8"),
                               flags=re.MULTILINE):
                problems.append(f"{module}: {path} has no {name}")
    assert problems == []
