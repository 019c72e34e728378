"""The trainer runs every task as an episode (rlvr.episodes.runner).

1. With the default single_turn environment a run samples, grades and rewards exactly
   what the pre-episode code path did: at every step of a 3-step run, main's path
   (render each record, `engine.generate` the texts, verify every completion's text)
   is replayed beside the trainer's and must agree token for token and reward for
   reward; since the update sees the same inputs, the run is the same run.
2. A tiny model trained 2 steps on a toy 2-turn environment ("again" after the first
   turn, a length reward from the environment on the second): the completions handed
   to the update carry the environment's tokens with loss mask 0, the episode metrics
   and the rollout lines' transcripts match what is computed here from the lines."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from async_helpers import TwoTurns
from rlvr.config import ConfigError
from rlvr.episodes.base import EpisodeLimits
from rlvr.rollout.base import SamplingParams
from rlvr.environments import registry
from rlvr.training import loop
from rlvr.training.run import train
from train_helpers import plugin_reward, tiny_config

AGAIN = "\n\nUser: again\n\nAssistant:"  # the plain-text protocol's delta for "again"


@pytest.mark.parametrize("override,field,words", [
    ("episodes.environment=nope", "episodes.environment", "unknown environment 'nope'"),
    ("episodes.options={a: 1}", "episodes.options", "'single_turn' takes no options"),
    ("episodes.max_turns=0", "episodes.max_turns", "must be >= 1"),
    ("episodes.max_tokens=-1", "episodes.max_tokens", "must be >= 0"),
    ("episodes.step_timeout_s=0", "episodes.step_timeout_s", "must be > 0"),
])
def test_bad_episode_settings_fail_when_the_config_loads(override, field, words):
    with pytest.raises(ConfigError) as caught:
        tiny_config(override)
    assert caught.value.field == field and words in str(caught.value)


def test_the_section_defaults_and_limits():
    cfg = tiny_config()
    assert (cfg.episodes.environment, cfg.episodes.options, cfg.episodes.max_turns) == \
        ("single_turn", {}, 1)
    assert cfg.episodes.limits(6) == EpisodeLimits(max_turns=1, max_tokens=6,
                                                   step_timeout_s=30.0)
    assert tiny_config("episodes.max_tokens=40").episodes.limits(6).max_tokens == 40


def test_single_turn_runs_are_the_pre_episode_code_path(tmp_path, monkeypatch):
    real_collect = loop.collect_groups
    checked = []

    def collect_beside_main(t, step, times):
        cfg, s = t.cfg, t.cfg.sampling
        position = t.order.state_dict()
        records = loop.take(t.records, t.order.next(s.prompts_per_step))
        t.order.load_state_dict(position)  # the trainer draws the same records next
        params = SamplingParams(max_new_tokens=s.max_new_tokens, temperature=s.temperature,
                                top_p=s.top_p, top_k=s.top_k, stop=tuple(s.stop),
                                seed=loop._sampling_seed(cfg.seed, step, 0),
                                keep_activations=t.update.wants_activations)
        # main's path: the rendered text through generate; the pool grades every text
        main = t.engine.generate([t.renderer.render(r) for r in records], s.group_size, params)
        from rlvr.training.rewards import verify_groups
        verdicts = verify_groups(t.pool, records, [[c.text for c in g] for g in main],
                                 cfg.reward.verifier, cfg.reward.options)
        main_rewards = torch.tensor([[v.score for v in g] for g in verdicts])

        groups, tokens = real_collect(t, step, times)
        assert [r.id for r in groups.records] == [r.id for r in records]
        for mine, theirs in zip(groups.completions, main):
            for c, m in zip(mine, theirs):
                assert (c.prompt_ids, c.token_ids, c.logprobs, c.text, c.finish_reason) == \
                    (m.prompt_ids, m.token_ids, m.logprobs, m.text, m.finish_reason)
                assert c.loss_mask is None
        assert torch.equal(groups.rewards, main_rewards)
        assert tokens == sum(len(c.token_ids) for g in main for c in g)
        checked.append(step)
        return groups, tokens

    monkeypatch.setattr(loop, "collect_groups", collect_beside_main)
    train(tiny_config("steps=3", "sft.steps=0", "sampling.group_size=4",
                      *plugin_reward("train_helpers:LengthVerifier")), tmp_path / "run")
    assert checked == [1, 2, 3]
    metrics = [json.loads(x) for x in (tmp_path / "run/metrics.jsonl").read_text().splitlines()]
    # a plain single-turn run logs no episode/* metrics: they would be constants
    assert metrics and not any(k.startswith("episode/") for m in metrics for k in m)


@pytest.fixture(scope="module")
def two_turn_run(tmp_path_factory):
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setitem(registry._REGISTRY, "again_test", registry.EnvironmentSpec(
        "again_test", lambda record, options, limits: TwoTurns(limits, {"tool_calls": 1}), None, "a test's"))
    packed = []
    real_pack = loop.pack

    def recording_pack(completions, pad_id, device):
        batch = real_pack(completions, pad_id, device)
        packed.append((list(completions), batch))
        return batch

    monkeypatch.setattr(loop, "pack", recording_pack)
    run_dir = tmp_path_factory.mktemp("episodes") / "run"
    cfg = tiny_config("steps=2", "sft.steps=0", "episodes.environment=again_test",
                      "episodes.max_turns=2", "episodes.max_tokens=40")
    try:
        train(cfg, run_dir)
    finally:
        monkeypatch.undo()
    lines = lambda name: [json.loads(x) for x in (run_dir / name).read_text().splitlines()]  # noqa: E731
    return cfg, packed, lines("metrics.jsonl"), lines("rollouts.jsonl")


def _layout(tokenizer, c, max_new_tokens):
    """(turn-1 length, delta ids) found without the loss mask: turn 1 ends at its EOS or
    at max_new_tokens; the environment's "again" follows."""
    eos = tokenizer.eos_token_id
    first = c.token_ids.index(eos) + 1 if eos in c.token_ids[:max_new_tokens] else max_new_tokens
    return first, tokenizer(AGAIN, add_special_tokens=False)["input_ids"]


def test_environment_tokens_reach_the_update_with_loss_mask_zero(two_turn_run):
    from rlvr.training.tiny import char_tokenizer

    cfg, packed, _, _ = two_turn_run
    tok, n = char_tokenizer(), cfg.sampling.max_new_tokens
    assert len(packed) == 2
    for completions, _ in packed:
        for c in completions:
            first, delta = _layout(tok, c, n)
            assert c.token_ids[first:first + len(delta)] == delta
            assert c.loss_mask == [1] * first + [0] * len(delta) + \
                [1] * (len(c.token_ids) - first - len(delta))
            assert all(c.logprobs[k] == 0.0 for k in range(first, first + len(delta)))


def test_packed_mask_has_zeros_exactly_at_the_environment_tokens(two_turn_run):
    cfg, packed, _, _ = two_turn_run
    for completions, batch in packed:
        for i, c in enumerate(completions):
            expected = torch.zeros(batch.mask.shape[1], dtype=batch.mask.dtype)
            expected[:len(c.token_ids)] = torch.tensor(c.loss_mask)
            assert torch.equal(batch.mask[i].cpu(), expected)


def test_episode_metrics_and_transcripts_by_hand(two_turn_run):
    cfg, _, metrics, rollouts = two_turn_run
    assert [m["step"] for m in metrics] == [1, 2]
    for m in metrics:
        mine = [x for x in rollouts if x["step"] == m["step"]]
        assert len(mine) == cfg.sampling.prompts_per_step * cfg.sampling.group_size
        rewards = [min(1.0, len(x["completion"]) / 6) for x in mine]  # the env's, by hand
        assert [x["reward"] for x in mine] == pytest.approx(rewards)
        assert m["reward/mean"] == pytest.approx(sum(rewards) / len(rewards))
        assert m["episode/turns_mean"] == 2.0 and m["episode/end_done"] == 1.0
        assert m["episode/tool_calls_mean"] == 2.0 and m["episode/tool_errors_mean"] == 0.0
        assert m["episode/success_by_turn_1"] == 0.0
        assert m["episode/success_by_turn_2"] == sum(r > 0 for r in rewards) / len(rewards)
        assert m["episode/end_env_error"] == 0.0 and m["episode/env_seconds"] >= 0.0
        assert "episodes with environment turns keep no activations" in m["update/path_reason"]
        for x in mine:
            e = x["episode"]
            assert (e["turns"], e["end_reason"], e["reward_source"]) == (2, "done",
                                                                         "environment")
            assert e["messages"][0] == {"role": "user", "content": x["prompt"]}
            assert e["messages"][2:] == [{"role": "user", "content": "again"},
                                         {"role": "assistant", "content": x["completion"]}]
            assert e["env_tokens"] == len(AGAIN) - 2  # each "\n\n" is one <unk> here
            assert e["model_tokens"] + e["env_tokens"] == x["length"]
            assert e["turn_rewards"] == [None, pytest.approx(x["reward"])]


def test_grade_episodes_sends_only_the_ungraded_final_texts_to_the_pool():
    from types import SimpleNamespace

    from rlvr.data.records import TaskRecord
    from rlvr.training.rewards import grade_episodes
    from rlvr.verifiers.base import Verdict

    class Pool:
        def __init__(self):
            self.cases = []

        def verify(self, cases):
            self.cases += cases
            return [Verdict(float(c.completion == c.reference), c.completion == c.reference)
                    for c in cases]

    def e(reward, final="", end="done", info=None):
        return SimpleNamespace(reward=reward, final_text=final, end_reason=end,
                               info={"env_info": [info or {}]})

    records = [TaskRecord("2+2=", "4", "exact", "a"), TaskRecord("1+1=", "2", "exact", "b")]
    episodes = [[e(None, "4"), e(0.25, info={"passed": False}), e(1.5)],
                [e(None, "x"), e(0.0, end="env_timeout"), e(-0.5, "2")]]
    pool = Pool()
    verdicts, rewards = grade_episodes(pool, records, episodes)
    assert [(c.completion, c.reference, c.prompt) for c in pool.cases] == \
        [("4", "4", "2+2="), ("x", "2", "1+1=")]
    assert [[(v.score, v.passed, v.reason) for v in g] for g in verdicts] == [
        [(1.0, True, ""), (0.25, False, "environment"), (1.0, True, "environment")],
        [(0.0, False, ""), (0.0, False, "env_timeout"), (0.0, False, "environment")]]
    assert rewards.tolist() == [[1.0, 0.25, 1.5], [0.0, 0.0, -0.5]]  # the env's, unclipped


def test_prefix_reuse_is_counted_per_step_within_hand_bounds(two_turn_run):
    """Turn 2 continues turn 1's row: it takes the first prompt and every turn-1 token the
    decode fed (all but perhaps the last) from the kept keys/values and prefills the
    environment's "again"; turn 1 reuses nothing (the weights changed since the last
    step, so nothing kept is valid)."""
    from rlvr.training.tiny import char_tokenizer

    cfg, packed, metrics, _ = two_turn_run
    tok, n = char_tokenizer(), cfg.sampling.max_new_tokens
    for m, (completions, _) in zip(metrics, packed):
        layouts = [(len(c.prompt_ids), *_layout(tok, c, n)) for c in completions]
        reused_low = sum(p + first - 1 for p, first, _ in layouts)
        reused_high = sum(p + first for p, first, _ in layouts)
        assert reused_low <= m["rollout/prefix_reused_tokens"] <= reused_high
        # turn 2's observations at least, and each problem's first prompt at least once
        first_prompts = cfg.sampling.prompts_per_step * layouts[0][0]
        assert m["rollout/prefix_prefilled_tokens"] >= \
            sum(len(delta) for *_, delta in layouts) + first_prompts
        total = m["rollout/prefix_reused_tokens"] + m["rollout/prefix_prefilled_tokens"]
        assert m["rollout/prefix_reuse_share"] == pytest.approx(
            m["rollout/prefix_reused_tokens"] / total)
        assert m["rollout/prefix_rows_not_kept"] == 0.0


def test_prefix_metrics_by_hand():
    from rlvr.rollout.base import prefix_metrics

    before = {"prefilled_tokens": 100, "reused_tokens": 40, "rows_not_kept": 1}
    after = {"prefilled_tokens": 130, "reused_tokens": 130, "rows_not_kept": 3}
    assert prefix_metrics(before, after) == {
        "rollout/prefix_prefilled_tokens": 30.0, "rollout/prefix_reused_tokens": 90.0,
        "rollout/prefix_reuse_share": 0.75, "rollout/prefix_rows_not_kept": 2.0}
    assert prefix_metrics({}, {}) == {}  # an engine without counters
    none = prefix_metrics(after, after)
    assert none["rollout/prefix_reuse_share"] == 0.0  # no prompt tokens this step
