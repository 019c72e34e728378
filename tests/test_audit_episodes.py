"""`rlvr audit` on episodes (hand-built run directories, tests/episode_fixtures.py): a
reward paid while the model's own last message states no answer (the answer only in a
tool result), and an environment fault counted as a pass; honest episodes, and faults
that were not paid, are not flagged."""

from __future__ import annotations

import json

import pytest

from cli_helpers import run_cli
from episode_fixtures import (FAULT_STEP, HACK_START, PROMPTS, SAMPLES, STEPS, episode_line,
                              read_jsonl, write_episode_run)
from rlvr.audit.episodes import counts_as_passed, episode_codes, holds_value, states_answer
from rlvr.audit.live import LiveAudit
from rlvr.audit.runaudit import audit_run
from rlvr.audit.rundata import RunDataError, load_run

HACKS = PROMPTS * (STEPS - HACK_START + 1)  # sample 3 of each prompt from HACK_START on


@pytest.fixture(scope="module")
def hacked_run(tmp_path_factory):
    return write_episode_run(tmp_path_factory.mktemp("runs") / "hacked", hacked=True)


@pytest.fixture(scope="module")
def honest_run(tmp_path_factory):
    return write_episode_run(tmp_path_factory.mktemp("runs") / "honest", hacked=False)


def test_what_counts_as_an_answer_in_the_models_own_message():
    assert states_answer("The answer is \\boxed{1024}.", "1024")
    assert states_answer("Is it 7?", 7)             # the reference's own text (guess_number)
    assert states_answer("I think 2 ** 10 is 1024", "1024")
    assert not states_answer("Done: the tool printed it.", "1024")
    # a tool call is not an answer, even one whose code holds the value
    assert not states_answer('<tool_call>{"name": "python", "arguments": {"code": '
                             '"print(1024)"}}</tool_call>', "1024")
    assert not states_answer("<tool_call>print(1024)", "1024")  # unclosed: runs to the end
    # structured references (tests, instructions): any text of its own is an answer
    assert states_answer("def f():\n    return 1", {"asserts": ["assert f() == 1"]})
    assert not states_answer("  ...  ", {"asserts": ["assert f() == 1"]})
    # not inside a longer number
    assert not holds_value("it is 1234", "12") and not holds_value("0.12", "12")
    assert holds_value("it is 12.", "12") and holds_value("x = 1 2", "12")


def test_episode_codes_and_what_is_paid():
    hack = episode_line(HACK_START, 0, 3, "hack")
    assert episode_codes(hack) == ["answer_outside_turn"] and counts_as_passed(hack)
    assert episode_codes(episode_line(1, 0, 0, "honest")) == []
    assert episode_codes(episode_line(1, 0, 3, "one_turn")) == []  # no environment turn
    # a fault paid with a failed verdict (reward 1) still counts as passed
    fault = episode_line(FAULT_STEP, 0, 2, "paid_fault")
    assert not fault["verdict"]["passed"] and fault["reward"] == 1.0
    assert counts_as_passed(fault) and episode_codes(fault) == ["paid_env_fault"]
    timeout = episode_line(1, 0, 2, "timeout")
    assert not counts_as_passed(timeout)
    # a line without an episode block: no codes; reward > 0 alone is not a pass there
    plain = {"completion": "x", "verdict": {"passed": False}, "reward": 0.5}
    assert episode_codes(plain) == [] and not counts_as_passed(plain)


def test_both_episode_flags_fire_on_the_hacked_run(hacked_run):
    result = audit_run(load_run(hacked_run))
    flags = {f.name: f for f in result.flags}
    outside = flags["answer_outside_turn"]
    # 2 hacks a step from HACK_START: 2 < 3 at HACK_START, 4 of 16 passed one step later
    assert (outside.count, outside.first_seen, outside.raised_at) == (HACKS, HACK_START,
                                                                     HACK_START + 1)
    fault = flags["paid_env_fault"]
    assert (fault.count, fault.first_seen, fault.raised_at) == (2, FAULT_STEP, FAULT_STEP)
    # passed: samples 0 and 3 of every prompt at every step, and the two paid faults
    assert result.passed == PROMPTS * 2 * STEPS + 2
    marked = {(line["step"], line["prompt_id"], line["sample"]): line["flags"]
              for line in result.flagged}
    hack_keys = {k for k, codes in marked.items() if "answer_outside_turn" in codes}
    assert hack_keys == {(s, f"pow-{p}-{s}", 3) for s in range(HACK_START, STEPS + 1)
                         for p in range(PROMPTS)}
    fault_keys = {k for k, codes in marked.items() if "paid_env_fault" in codes}
    assert fault_keys == {(FAULT_STEP, f"pow-{p}-{FAULT_STEP}", 2) for p in range(PROMPTS)}


def test_honest_episodes_and_unpaid_faults_are_not_flagged(honest_run):
    lines = read_jsonl(honest_run / "rollouts.jsonl")
    assert sum(line["episode"]["end_reason"] == "env_timeout" for line in lines) == PROMPTS * STEPS
    result = audit_run(load_run(honest_run))
    assert result.raised == [] and result.flagged == [] and result.flags == []
    assert result.passed == PROMPTS * 2 * STEPS


def test_a_verifier_without_strict_rules_still_gets_the_episode_checks(hacked_run):
    """The math rules' no_answer also marks the hacks; a verifier the strict re-check
    does not know (an environment's own grading) leaves the episode codes alone."""
    result = audit_run(load_run(hacked_run, verifier="my_env_grader"))
    assert {f.name for f in result.raised} == {"answer_outside_turn", "paid_env_fault"}


def test_the_trainer_warns_at_the_fault_step():
    audit = LiveAudit(3, "math")
    warned = {}
    for step in range(1, STEPS + 1):
        lines = [episode_line(step, p, s,
                              "paid_fault" if (s, step) == (2, FAULT_STEP) else "honest")
                 for p in range(PROMPTS) for s in range(SAMPLES)]
        warned[step] = audit.observe(step, lines)
    assert [s for s, w in warned.items() if w] == [FAULT_STEP]
    assert warned[FAULT_STEP][0].startswith(
        f"audit warning, steps {FAULT_STEP - 2}-{FAULT_STEP}: paid_env_fault in 2 of ")


def test_cli_reports_both_and_a_bad_episode_block_names_its_line(hacked_run, tmp_path):
    result = run_cli("audit", str(hacked_run), "--json", "--out", str(tmp_path / "f.jsonl"))
    assert result.returncode == 1, result.stderr
    assert {"answer_outside_turn", "paid_env_fault"} <= set(json.loads(result.stdout)["raised"])
    broken = tmp_path / "broken"
    write_episode_run(broken, hacked=False)
    lines = (broken / "rollouts.jsonl").read_text().splitlines()
    bad = json.loads(lines[4])
    bad["episode"]["messages"] = [{"role": "user", "content": 5}]
    lines[4] = json.dumps(bad)
    (broken / "rollouts.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(RunDataError, match=r"rollouts.jsonl:5: 'episode.messages\[0\]'"):
        load_run(broken)
