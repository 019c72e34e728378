"""The `verifiers` environment (rlvr.environments.ecosystem.verifiers_env) on environments
built from the verifiers library's own classes (tests/verifiers_env_fixtures.py): records
from the environment's dataset, rewards from its rubric (weights summed as the library's
Rubric documents: sum of weight * function value), a MultiTurnEnv's env_response as the
episode's observations, options refused naming the field, and one short training run."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("verifiers.legacy", reason="verifiers 0.3.1 is not installed (pip "
                    "install 'rlvr[verifiers]'; docs/recipes.md gives the no-deps "
                    "command for rlvr's development venv)")

import verifiers_env_fixtures as fx  # noqa: E402

from rlvr.environments import registry  # noqa: E402
from rlvr.environments.ecosystem import verifiers_env as ve  # noqa: E402
from rlvr.episodes.base import EpisodeLimits  # noqa: E402
from rlvr.errors import UserError  # noqa: E402

MODULE = "verifiers_env_fixtures"
SYSTEM = "Answer inside <answer></answer>."


def _env(**options):
    return ve.load_environment(ve.check_options({"module": MODULE, **options}))


def _play(env, record, turns, max_turns=4):
    """The episode's replies to `turns` (stopping at the first done one)."""
    episode = ve.VerifiersEpisode(env, EpisodeLimits(max_turns=max_turns))
    first = episode.reset(record)
    replies = []
    try:
        for turn in turns:
            replies.append(episode.step(turn))
            if replies[-1].done:
                break
    finally:
        episode.close()
    return first, replies


def test_records_come_from_the_environments_dataset():
    env = _env(args={"n": 5})
    records = ve.records(env)
    assert len(records) == 5
    for index, (record, (a, b)) in enumerate(zip(records, fx.SUMS)):
        assert record.prompt == [{"role": "system", "content": SYSTEM},
                                 {"role": "user", "content": f"What is {a} + {b}?"}]
        row = record.reference["row"]
        assert (row["answer"], row["info"], row["example_id"]) == (str(a + b),
                                                                   {"a": a, "b": b}, index)
        assert record.id == f"vf-train-{index}" and record.verifier == ve.VERIFIER
    assert [r.id for r in ve.records(env, limit=2)] == ["vf-train-0", "vf-train-1"]


def test_a_right_answer_earns_the_rubrics_reward_and_a_wrong_one_zero():
    env = _env(args={"n": 3})
    record = ve.records(env)[1]  # 10 + 7
    first, [right] = _play(env, record, ["so <answer>17</answer>"])
    assert first == record.prompt
    assert (right.reward, right.done, right.observation) == (1.0, True, [])
    assert right.info["passed"] is True and right.info["parsed_answer"] == "17"
    _, [wrong] = _play(env, record, ["<answer>18</answer>"])
    assert (wrong.reward, wrong.info["passed"]) == (0.0, False)
    _, [none] = _play(env, record, ["17"])  # no <answer>: the parser finds none
    assert none.reward == 0.0


@pytest.mark.parametrize("turn, expected", [
    # correct_answer * 1.0 + brief * 0.5 + uses_info * 0.25, each function's value by hand
    ("<answer>17</answer>", 1.0 + 0.5 + 0.0),             # right, short, no "10" outside
    ("10 and 7: <answer>17</answer>", 1.0 + 0.5 + 0.25),  # names a=10
    ("<answer>16</answer> since 10 + 7 is sixteen, surely.", 0.0 + 0.0 + 0.25),  # long
    ("<answer>3</answer>", 0.0 + 0.5 + 0.0),
])
def test_a_weighted_rubric_sums_weight_times_value(turn, expected):
    env = _env(args={"n": 2, "weights": [1.0, 0.5, 0.25]})
    _, [reply] = _play(env, ve.records(env)[1], [turn])
    assert reply.reward == pytest.approx(expected)
    metrics = reply.info["verifiers_metrics"]
    assert set(metrics) == {"correct_answer", "brief", "uses_info", "num_turns"}
    assert (metrics["correct_answer"] * 1.0 + metrics["brief"] * 0.5
            + metrics["uses_info"] * 0.25) == pytest.approx(expected)
    assert reply.info["passed"] is (expected >= 0.5)  # the environment's pass_threshold


def test_a_multi_turn_environment_answers_through_env_response():
    env = _env(load="load_hint", args={"n": 2})
    record = ve.records(env)[0]  # 2 + 3
    first, replies = _play(env, record, ["<answer>6</answer>", "<answer>5</answer>"])
    assert first == [{"role": "user", "content": "What is 2 + 3?"}]
    assert replies[0].observation == [{"role": "user", "content": "try again"}]
    assert (replies[0].reward, replies[0].done) == (None, False)
    assert (replies[1].reward, replies[1].done) == (1.0, True)
    assert replies[1].info["stop_condition"] == "solved"
    # rlvr's own turn limit (2, under the environment's 3) ends and grades the episode
    _, replies = _play(env, record, ["<answer>1</answer>"] * 3, max_turns=2)
    assert [(r.reward, r.done) for r in replies] == [(None, False), (0.0, True)]
    # the environment's max_turns (3) ends it when rlvr allows more
    _, replies = _play(env, record, ["<answer>1</answer>"] * 5, max_turns=5)
    assert len(replies) == 3 and replies[-1].info["stop_condition"] == "max_turns_reached"


@pytest.mark.parametrize("options, field, says", [
    ({}, "episodes.options.module", "must name a Python module"),
    ({"module": "no such"}, "episodes.options.module", "must name a Python module"),
    ({"module": "no_such_module_xyz"}, "episodes.options.module", "cannot import"),
    ({"module": MODULE, "load": "absent"}, "episodes.options.load", "has no function"),
    ({"module": MODULE, "load": "not_an_environment"}, "episodes.options.load",
     "not a verifiers MultiTurnEnv"),
    ({"module": MODULE, "load": "load_group_rubric"}, "episodes.options.load",
     "group-level reward functions"),
    ({"module": MODULE, "args": [1]}, "episodes.options.args", "expected a mapping"),
    ({"module": MODULE, "args": {"colour": 1}}, "episodes.options.args", "colour"),
    ({"module": MODULE, "url": "x"}, "episodes.options.url", "has no such option"),
])
def test_bad_options_are_refused_naming_the_field(options, field, says):
    with pytest.raises(UserError) as caught:
        registry.check_environment("verifiers", options)
    assert str(caught.value).startswith(field) and says in str(caught.value)


def test_the_records_verifier_checks_references_and_never_grades_alone():
    verifier = ve.VerifiersRowVerifier()
    verifier.check_reference({"row": {"answer": "5"}})
    with pytest.raises(Exception, match="verifiers dataset row"):
        verifier.check_reference({"answer": "5"})
    verdict = verifier.verify("<answer>5</answer>", {"row": {"answer": "5"}})
    assert (verdict.score, verdict.passed, verdict.reason) == \
        (0.0, False, "needs_verifiers_environment")


def test_a_short_training_run_is_graded_by_the_rubric(tmp_path):
    from rlvr.training.run import train
    from train_helpers import tiny_config

    options = {"module": MODULE, "args": {"n": 8, "weights": [1.0, 0.5]}}
    data = tmp_path / "sums.jsonl"
    ve.write_jsonl(ve.records(_env(**options)), data)
    cfg = tiny_config("steps=1", "sft.steps=0", "data.eval_size=0", f"data.path={data}",
                      f"data.eval_path={data}", f"reward.plugins=[{ve.VERIFIER}]",
                      "episodes.environment=verifiers",
                      f"episodes.options={json.dumps(options)}")
    run_dir = tmp_path / "run"
    train(cfg, run_dir)
    rows = [json.loads(x) for x in (run_dir / "rollouts.jsonl").read_text().splitlines()]
    answers = {f"What is {a} + {b}?": str(a + b) for a, b in fx.SUMS}
    assert len(rows) == cfg.sampling.prompts_per_step * cfg.sampling.group_size
    for row in rows:
        text = row["completion"]
        found = re.findall(r"<answer>\s*(.*?)\s*</answer>", text, re.DOTALL)
        question = next(q for q in answers if q in row["prompt"])
        right = bool(found) and found[-1] == answers[question]
        assert row["reward"] == pytest.approx(1.0 * right + 0.5 * (len(text) < 40))
        assert row["episode"]["reward_source"] == "environment"
