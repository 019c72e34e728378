"""episode/* metrics and the rollout line's episode block, on episodes written by hand."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rlvr.training.episode_metrics import END_KINDS, episode_metrics, episode_record


def ep(turns, end, calls=0, errors=0, seconds=0.0, env_tokens=0, reward=None):
    return SimpleNamespace(turns=turns, end_reason=end, reward=reward,
                           messages=[{"role": "user", "content": "q"}],
                           info={"tool_calls": calls, "tool_errors": errors,
                                 "env_seconds": seconds, "turn_rewards": [None] * turns},
                           model_tokens=5, env_tokens=env_tokens)


def test_metrics_by_hand():
    episodes = [[ep(1, "done", 1, 0, 0.5), ep(2, "done", 2, 1, 1.0, 7)],
                [ep(3, "max_turns", 3, 3, 0.25, 9), ep(1, "env_error: ValueError: x", 0, 0, 2.0)]]
    rewards = [[1.0, 0.5], [0.0, 0.0]]  # episode 3 ran 3 turns and failed; 4 crashed
    m = episode_metrics(episodes, rewards, max_turns=3)
    assert m["episode/turns_mean"] == (1 + 2 + 3 + 1) / 4
    assert m["episode/tool_calls_mean"] == (1 + 2 + 3 + 0) / 4
    assert m["episode/tool_errors_mean"] == (0 + 1 + 3 + 0) / 4
    assert m["episode/env_seconds"] == pytest.approx(3.75)
    # success: reward > 0 and ended at turn k, over all 4 episodes
    assert [m[f"episode/success_by_turn_{k}"] for k in (1, 2, 3)] == [0.25, 0.25, 0.0]
    ends = {kind: m[f"episode/end_{kind}"] for kind in END_KINDS}
    assert ends == {"done": 0.5, "max_turns": 0.25, "max_tokens": 0.0, "env_timeout": 0.0,
                    "env_error": 0.25, "bad_observation": 0.0}
    assert episode_metrics([], [], 3) == {}


def test_the_rollout_block_carries_the_transcript_only_with_environment_turns():
    single = episode_record(ep(1, "done"))
    assert single == {"turns": 1, "end_reason": "done", "model_tokens": 5, "env_tokens": 0,
                      "reward_source": "verifier", "tool_calls": 0, "tool_errors": 0}
    several = ep(2, "done", env_tokens=4, reward=1.0)
    several.messages.append({"role": "tool", "content": "out", "extra": object()})
    block = episode_record(several)
    assert block["reward_source"] == "environment" and block["env_tokens"] == 4
    assert block["messages"][0] == {"role": "user", "content": "q"}
    assert block["messages"][1]["extra"].startswith("<object object")  # made JSON-safe
    assert block["turn_rewards"] == [None, None]
