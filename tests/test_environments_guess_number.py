"""The guess_number environment and its generated data (rlvr.environments.guess_number,
rlvr.data.guess_number, the guess-number-* aliases of rlvr.data.sources)."""

from __future__ import annotations

import pytest

from rlvr.data.guess_number import GuessNumberTask
from rlvr.data.loading import load_records
from rlvr.data.records import TaskRecord
from rlvr.data.sources import resolve_data_path
from rlvr.environments import guess_number
from rlvr.environments.guess_number import HIGHER, LOWER, NO_NUMBER, read_guess
from rlvr.episodes.base import EpisodeLimits


def _episode(secret, max_turns=4, **options):
    env = guess_number.make(TaskRecord("Guess 1..8", str(secret), "exact", "t"), options,
                            EpisodeLimits(max_turns=max_turns, max_tokens=64))
    first = env.reset(TaskRecord("Guess 1..8", str(secret), "exact", "t"))
    return env, first


def test_hints_then_a_right_guess():
    env, first = _episode(6)
    assert first == [{"role": "user", "content": "Guess 1..8"}] and env.tools == ()
    replies = [env.step(turn) for turn in ("I guess 4.", "7", "It is 6")]
    assert [r.observation for r in replies[:2]] == [[{"role": "user", "content": HIGHER}],
                                                   [{"role": "user", "content": LOWER}]]
    assert [(r.done, r.reward) for r in replies] == [(False, None), (False, None), (True, 1.0)]
    assert replies[2].observation == [] and replies[2].info["solved"] is True


def test_turn_cost_and_running_out_of_turns():
    env, _ = _episode(3, turn_cost=0.25)
    env.step("5"), env.step("2")
    assert env.step("3").reward == pytest.approx(1 - 0.25 * 2)  # right on turn 3
    env, _ = _episode(3, max_turns=2)
    assert env.step("8").done is False
    last = env.step("1")
    assert (last.done, last.reward, last.info["solved"]) == (True, 0.0, False)


def test_a_turn_without_a_number_gets_a_reminder_and_costs_its_turn():
    env, _ = _episode(2, max_turns=2)
    reply = env.step("Hmm, let me think")
    assert reply.observation == [{"role": "user", "content": NO_NUMBER}] and not reply.done
    assert env.step("2").reward == 1.0
    assert read_guess("between 1 and 8, say 5") == 5 and read_guess("-3") == -3
    assert read_guess("none") is None


def test_halving_the_range_always_wins_within_four_turns_on_one_to_eight():
    """An independent player (binary search over the hints) against every number."""
    for secret in range(1, 9):
        env, _ = _episode(secret)
        lo, hi = 1, 8
        for _ in range(4):
            guess = (lo + hi) // 2
            reply = env.step(str(guess))
            if reply.done:
                break
            hint = reply.observation[0]["content"]
            lo, hi = (guess + 1, hi) if hint == HIGHER else (lo, guess - 1)
        assert reply.done and reply.reward == 1.0, secret


def test_a_reference_that_is_no_integer_fails_at_reset():
    env = guess_number.make(TaskRecord("x", "seven", "exact", "bad"), {}, EpisodeLimits(4))
    with pytest.raises(ValueError, match="record 'bad': the reference must be an integer"):
        env.reset(TaskRecord("x", "seven", "exact", "bad"))


def test_the_generator_is_seeded_in_range_and_hides_the_number():
    task = GuessNumberTask(3, 9)
    train = task.generate(300, "train", seed=1)
    assert train == task.generate(300, "train", seed=1)
    assert [r.reference for r in train] != [r.reference for r in task.generate(300, "test", 1)]
    assert {int(r.reference) for r in train} == set(range(3, 10))  # 300 draws hit all 7
    assert len({r.prompt for r in train}) == 1 and "from 3 to 9" in train[0].prompt
    assert len({r.id for r in train}) == 300
    with pytest.raises(ValueError, match="need lo < hi"):
        GuessNumberTask(5, 5)


def test_the_generated_alias_loads_as_a_dataset(tmp_path, monkeypatch):
    monkeypatch.setenv("RLVR_CACHE", str(tmp_path))
    path = resolve_data_path("guess-number-train")
    assert path.startswith(str(tmp_path)) and resolve_data_path("guess-number-train") == path
    records = load_records(path)  # checked like any dataset: the exact verifier's reference
    expected = GuessNumberTask(1, 8).generate(2000, "train", seed=0)
    assert [r.reference for r in records] == [r.reference for r in expected]
    assert {r.verifier for r in records} == {"exact"}
