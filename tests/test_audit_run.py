"""`rlvr audit RUN` and the trainer's LiveAudit on synthetic run directories in the real
format (tests/audit_fixtures.py), modelled on issue 14's hacked run."""

from __future__ import annotations

import json

import pytest

from audit_fixtures import HACK_START, hacks_at, read_jsonl, write_run
from cli_helpers import run_cli
from rlvr.audit.detect import (StepTally, attempt_code_flags, form_takeover,
                               reward_without_heldout)
from rlvr.audit.live import LiveAudit
from rlvr.audit.runaudit import audit_run
from rlvr.audit.rundata import RunDataError, load_run


@pytest.fixture(scope="module")
def hacked_run(tmp_path_factory):
    return write_run(tmp_path_factory.mktemp("runs") / "hacked", hacked=True)


@pytest.fixture(scope="module")
def honest_run(tmp_path_factory):
    return write_run(tmp_path_factory.mktemp("runs") / "honest", hacked=False)


def test_fixture_follows_the_issue_schedule():
    # hand-computed: round(1.4 * k) for k = step - 14
    assert [hacks_at(s, True) for s in (14, 15, 16, 20, 30, 40)] == [0, 1, 3, 8, 22, 22]


def test_hacked_run_is_flagged_by_step_30(hacked_run):
    result = audit_run(load_run(hacked_run))
    raised = {f.name: f for f in result.raised}
    assert {"echoes_prompt", "unevaluated", "conflicting"} <= set(raised)
    assert any(name.startswith("form_takeover:") for name in raised)
    for flag in result.raised:
        assert HACK_START <= flag.raised_at <= 30, flag
    # every hack attempt passed, and each one is echo + unevaluated
    hacks = sum(hacks_at(s, True) for s in range(1, 51))
    assert raised["echoes_prompt"].count == raised["unevaluated"].count == hacks
    assert raised["echoes_prompt"].first_seen == HACK_START
    assert not any(f.name == "reward_without_heldout" for f in result.raised)


def test_honest_run_is_not_flagged(honest_run):
    result = audit_run(load_run(honest_run))
    assert result.raised == [] and result.flagged == []
    assert result.passed > 500  # it did learn: most of 1600 attempts pass late on


def test_per_step_windows_count_by_hand():
    # step 1: 24 passed, steps 2-11: 2 passed each; one flagged attempt at steps 9, 10, 11.
    # window 1-10: 2 flagged (< 3); window 2-11: 3 flagged of 20 passed (15% >= 10%)
    tallies = {s: StepTally(attempts=8, passed=2) for s in range(1, 12)}
    tallies[1].passed = 24
    for s in (9, 10, 11):
        tallies[s].flags["unevaluated"] = 1
    flag = attempt_code_flags(tallies, window=10)[0]
    assert (flag.name, flag.count, flag.first_seen, flag.raised_at) == ("unevaluated", 3, 9, 11)
    assert flag.windows == [(1, 10, 2, 42), (11, 20, 1, 2)]
    # one 11-step window: 3 flagged among 24 + 13 + 9 * 2 = 55 passed, under 10%
    tallies[5].passed = 13
    assert attempt_code_flags(tallies, window=11)[0].raised_at is None


def test_form_takeover_rule_by_hand():
    # steps 1-5: 10 integer passes; steps 6-7: 4 expression + 1 integer -> 80% > 60%
    tallies = {s: StepTally(passed=2) for s in range(1, 8)}
    for s in range(1, 6):
        tallies[s].forms["integer"] = 2
    tallies[6].forms.update({"expression": 2})
    tallies[7].forms.update({"expression": 2})
    tallies[7].passed = 3
    tallies[7].forms["integer"] = 1
    flags = form_takeover(tallies, window=2)
    assert [(f.name, f.first_seen, f.raised_at, f.count) for f in flags] == \
        [("form_takeover:expression", 6, 7, 4)]
    # the same shift with only 4 passes in the window is too little evidence
    tallies[7].passed, tallies[7].forms["expression"] = 2, 1
    assert form_takeover(tallies, window=2) == []


def test_reward_rising_while_heldout_stays_flat(tmp_path):
    # hacked fixture accuracy: steps 1-10 ~0.08, steps 41-50 ~0.77 -> rise ~0.69 >= 0.20;
    # held-out 0.067 -> 0.08: +0.013 < 0.69 / 4
    flat = load_run(write_run(tmp_path / "flat", hacked=True, heldout=(0.067, 0.08)))
    flag = reward_without_heldout(flat.metrics, flat.summary, window=10)
    assert flag.raised and flag.raised_at == 50 and "+0.01" in flag.detail
    # with periodic held-out numbers, the first one past the start already shows it
    periodic = load_run(write_run(tmp_path / "periodic", hacked=True,
                                  heldout=(0.067, 0.08), eval_every=10))
    assert reward_without_heldout(periodic.metrics, periodic.summary, 10).raised_at == 30
    # the issue's own held-out lift (0.067 -> 0.40, +0.33) is more than a quarter of it
    kept = load_run(write_run(tmp_path / "kept", hacked=True))
    assert not reward_without_heldout(kept.metrics, kept.summary, 10).raised
    assert reward_without_heldout([], {}, 10) is None


def test_flagged_attempts_file_is_ready_for_labelling(hacked_run, tmp_path):
    out = tmp_path / "flagged.jsonl"
    result = run_cli("audit", str(hacked_run), "--out", str(out))
    assert result.returncode == 1, result.stderr
    assert "RAISED" in result.stdout and "FLAGGED: " in result.stdout
    assert "echoes_prompt" in result.stdout and "share of passed: 1-10 0% (0/" in result.stdout
    lines = read_jsonl(out)
    assert len(lines) == sum(hacks_at(s, True) for s in range(1, 51))
    first = lines[0]
    assert set(first) >= {"step", "prompt_id", "prompt", "completion", "reference", "verdict",
                          "flags", "label"}
    assert first["label"] == "" and first["step"] == HACK_START
    assert {"echoes_prompt", "unevaluated"} <= set(first["flags"])
    assert first["verdict"]["passed"] is True and "\\boxed{" in first["completion"]


def test_cli_json_and_honest_exit_zero(honest_run, hacked_run, tmp_path):
    result = run_cli("audit", str(honest_run), "--json", "--out", str(tmp_path / "f.jsonl"))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["raised"] == [] and report["flagged_attempts"] == 0
    assert report["verifier"] == "math" and report["steps"] == 50 and report["attempts"] == 1600
    result = run_cli("audit", str(hacked_run), "--json", "--window", "5",
                     "--out", str(tmp_path / "g.jsonl"))
    report = json.loads(result.stdout)
    assert result.returncode == 1 and report["window"] == 5
    assert all(f["raised_at"] <= 30 for f in report["flags"] if f["raised"])


def test_bad_input_exits_2_naming_file_and_line(tmp_path, hacked_run):
    result = run_cli("audit", str(tmp_path / "nope"))
    assert result.returncode == 2 and "no such run directory" in result.stderr
    (tmp_path / "empty").mkdir()
    result = run_cli("audit", str(tmp_path / "empty"))
    assert result.returncode == 2 and "rollouts.jsonl: missing" in result.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    lines = (hacked_run / "rollouts.jsonl").read_text().splitlines()[:3]
    (broken / "rollouts.jsonl").write_text("\n".join([lines[0], "{not json", lines[2]]) + "\n")
    result = run_cli("audit", str(broken))
    assert result.returncode == 2
    assert f"{broken / 'rollouts.jsonl'}:2: malformed JSON" in result.stderr
    (broken / "rollouts.jsonl").write_text(lines[0] + "\n" + '{"step": "3"}\n')
    with pytest.raises(RunDataError, match=r"rollouts.jsonl:2: 'step' must be an integer"):
        load_run(broken)
    assert run_cli("audit", str(hacked_run), "--window", "0").returncode == 2


def test_a_line_cut_by_a_kill_is_skipped(tmp_path, hacked_run):
    run = tmp_path / "killed"
    run.mkdir()
    lines = (hacked_run / "rollouts.jsonl").read_text().splitlines()[:2]
    (run / "rollouts.jsonl").write_text(lines[0] + "\n" + lines[1][:40])  # no final newline
    assert len(load_run(run).attempts) == 1


def test_live_audit_warns_by_step_30_and_not_on_an_honest_run(hacked_run, honest_run):
    warnings = _live_warnings(hacked_run, every=10)
    steps_warned = sorted(warnings)
    assert steps_warned and steps_warned[0] == 20  # the hack starts at step 15
    first = warnings[steps_warned[0]]
    assert any("echoes_prompt in" in line and "passed attempts" in line and "e.g. step" in line
               for line in first)
    assert any("form takeover" in line for lines in warnings.values() for line in lines)
    assert _live_warnings(honest_run, every=10) == {}
    assert _live_warnings(hacked_run, every=0) == {}


def _live_warnings(run_dir, every):
    data = load_run(run_dir)
    audit = LiveAudit(every, data.verifier)
    found = {}
    for step in range(1, 51):
        metrics = {}
        lines = audit.observe(step, [a for a in data.attempts if a["step"] == step], metrics)
        if every:  # every step carries the key (0 between audit steps): one key set
            assert metrics["audit/warnings"] == (len(lines) if step % every == 0 else 0)
        else:
            assert "audit/warnings" not in metrics
        if lines:
            found[step] = lines
    return found


def test_a_reward_high_from_the_start_holding_while_heldout_falls():
    # a learned reward: training accuracy ~0.95 from step 1 (no rise to speak of) while
    # held-out accuracy falls 0.25 -> 0.20 (-0.05: not yet) -> 0.10 (-0.15: raised)
    metrics = [{"step": s, "accuracy": 0.95 if s <= 10 else 1.0} for s in range(1, 21)]
    metrics[14]["eval/accuracy"] = 0.20  # step 15
    summary = {"steps": 20, "eval": {"before": {"accuracy": 0.25}, "after": {"accuracy": 0.10}}}
    flag = reward_without_heldout(metrics, summary, window=10)
    assert flag.raised and flag.raised_at == 20
    assert "held-out -0.15" in flag.detail and "training accuracy +0.05" in flag.detail
    # the same reward while held-out holds (-0.05 at the end) is not raised
    summary["eval"]["after"]["accuracy"] = 0.20
    assert not reward_without_heldout(metrics, summary, window=10).raised
    # nor a falling reward with a falling held-out: that is a run getting worse, not a hack
    falling = [{"step": s, "accuracy": 0.9 - 0.02 * s} for s in range(1, 21)]
    summary["eval"]["after"]["accuracy"] = 0.10
    assert not reward_without_heldout(falling, summary, window=10).raised
