"""Every bad input of tests/bad_inputs.py ends in one clear error before any work; the subprocess
cases (Ctrl-C during training, a closed pipe, a full disk) end quietly or with one line."""
import pytest

import bad_inputs


@pytest.mark.parametrize("case", bad_inputs.CASES, ids=lambda c: c.name)
def test_bad_input_is_refused_cleanly(case, tmp_path):
    outcome = bad_inputs.run_case(case, tmp_path)
    if outcome.kind == "skipped":
        pytest.skip(outcome.detail)
    assert outcome.kind == "clean", outcome.describe()


def test_case_names_are_unique_and_every_subcommand_is_covered():
    names = [c.name for c in bad_inputs.CASES]
    assert len(names) == len(set(names))
    covered = {c.argv[0] for c in bad_inputs.CASES if c.argv}
    assert {"episode", "info", "train", "eval", "bench", "bench-scan", "ship", "reproduce", "em-vs-sgd",
            "cache"} <= covered
    assert len(names) >= 80


def test_every_function_the_cases_stop_still_exists(monkeypatch, tmp_path):
    bad_inputs.check_work()
    monkeypatch.setattr(bad_inputs, "WORK", bad_inputs.WORK + (("bwt_lite.checkpoints", "moved_away"),))
    with pytest.raises(bad_inputs.StaleWork, match=r"bwt_lite\.checkpoints\.moved_away"):
        bad_inputs.run_case(bad_inputs.CASES[0], tmp_path)


def _check(outcome):
    if outcome.kind == "skipped":
        pytest.skip(outcome.detail)
    assert outcome.kind == "clean", outcome.describe()
    return outcome


def test_sigint_during_training_says_where_the_run_resumes(tmp_path):
    outcome = _check(bad_inputs.sigint_during_training(tmp_path))
    assert outcome.rc == 130 and str(tmp_path / "cache") in outcome.detail and "'bwt train " in outcome.detail


def test_closed_pipe_with_json_output_is_quiet(tmp_path):
    assert _check(bad_inputs.closed_pipe_json(tmp_path)).rc in (0, 141)


def test_closed_pipe_with_text_output_is_quiet(tmp_path):
    assert _check(bad_inputs.closed_pipe_text(tmp_path)).rc in (0, 141)


def test_stdout_to_a_full_disk_gives_one_line(tmp_path):
    assert _check(bad_inputs.full_disk(tmp_path)).rc == 1


def test_the_script_summary_line():
    outcomes = [bad_inputs.Outcome("a", "clean", 2, 0.0, ""), bad_inputs.Outcome("b", "skipped", None, 0.0, "")]
    assert bad_inputs.summary(outcomes) == "1 cases: 1 clean, 0 tracebacks, 0 silent accepts, 0 timeouts (1 skipped)"
