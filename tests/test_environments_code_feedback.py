"""The code_feedback environment: attempts graded by a (fake, then real) code verifier,
the failure's output bounded and sanitised as the next user turn."""

from __future__ import annotations

import time

import pytest

from rlvr.data.records import TaskRecord
from rlvr.environments import code_feedback
from rlvr.environments.code_feedback import CodeFeedback, CodeFeedbackOptions, feedback
from rlvr.episodes.base import EpisodeLimits
from rlvr.verifiers.base import InvalidReference, Verdict

REFERENCE = {"asserts": ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]}
RECORD = TaskRecord("Write add(a, b).", REFERENCE, "code", "add")


class FakeVerifier:
    """Answers the queued verdicts in order and remembers what it was asked."""

    def __init__(self, verdicts):
        self.verdicts, self.seen, self.closed = list(verdicts), [], False

    def check_reference(self, reference):
        if "asserts" not in reference:
            raise InvalidReference("no asserts")

    def verify(self, completion, reference):
        self.seen.append((completion, reference))
        return self.verdicts.pop(0)


def _env(verdicts, max_turns=3, **options):
    fake = FakeVerifier(verdicts)
    env = CodeFeedback(EpisodeLimits(max_turns=max_turns), CodeFeedbackOptions(**options),
                       make_verifier=lambda _: fake)
    fake.close = lambda: setattr(fake, "closed", True)
    return env, fake


FAILED = Verdict(0.5, False, "failed_tests", {
    "passed_tests": 1, "total_tests": 2,
    "errors": ["AssertionError: add(2, 2) gave 5 at /home/alice/project/secret.py\x1b[2J"]})


def test_a_failure_comes_back_as_the_next_user_turn_then_a_pass_ends_it():
    env, fake = _env([FAILED, Verdict.correct()], turn_cost=0.2)
    first = env.reset(RECORD)
    assert first == [{"role": "user", "content": f"Write add(a, b).\n\n{code_feedback.DEFAULT_NOTE}"}]
    reply = env.step("def add(a, b): return a + b + (a == 2)")
    assert not reply.done and reply.reward is None
    [message] = reply.observation
    assert message["role"] == "user"
    assert message["content"] == (
        "The tests failed (failed_tests: 1 of 2 passed).\n"
        "AssertionError: add(2, 2) gave 5 at <path>/secret.py\\u001b[2J\n"
        "Send the whole corrected program.")
    done = env.step("def add(a, b): return a + b")
    assert done.done and done.reward == pytest.approx(0.8)  # passed on attempt 2: 1 - 0.2
    assert [seen[1] for seen in fake.seen] == [REFERENCE, REFERENCE]
    env.close()
    assert fake.closed


def test_feedback_is_bounded():
    long = Verdict(0.0, False, "failed_tests", {"passed_tests": 0, "total_tests": 1,
                                                "errors": ["E" * 5000]})
    text = feedback(long, 300)
    details = text.split("\n", 1)[1].rsplit("\n", 1)[0]
    assert len(details) <= 300 and "characters cut" in details
    timeout = feedback(Verdict(0.0, False, "timeout", {"limit_s": 6.0}), 300)
    assert "(timeout)." in timeout and "time limit: 6.0 s" in timeout


def test_out_of_attempts_scores_zero_and_attempts_never_exceed_max_turns():
    env, _ = _env([FAILED, FAILED], max_turns=5, max_attempts=2)
    env.reset(RECORD)
    env.step("a")
    last = env.step("b")
    assert (last.done, last.reward, last.observation) == (True, 0.0, [])
    env, _ = _env([FAILED] * 2, max_turns=2, max_attempts=9)
    assert env.max_attempts == 2


def test_a_sandbox_error_is_the_environments_failure_and_a_bad_reference_fails_reset():
    env, _ = _env([Verdict.error("zygote gone")])
    env.reset(RECORD)
    with pytest.raises(RuntimeError, match="could not grade: zygote gone"):
        env.step("x")
    env, _ = _env([])
    with pytest.raises(InvalidReference):
        env.reset(TaskRecord("p", {"io": []}, "code", "bad"))


def test_each_factory_call_is_a_fresh_environment_with_its_own_verifier():
    one = code_feedback.make(RECORD, {"sandbox": "none-unsafe"}, EpisodeLimits(2))
    two = code_feedback.make(RECORD, {"sandbox": "none-unsafe"}, EpisodeLimits(2))
    assert one is not two
    one.reset(RECORD), two.reset(RECORD)
    assert one._verifier is not two._verifier
    one.close(), two.close()
    assert one._verifier is None


def test_a_real_sandbox_episode():
    """bwrap: a wrong program, its assertion message back, then the right one."""
    started = time.monotonic()
    env = code_feedback.make(RECORD, {"packages": [], "feedback_chars": 200},
                             EpisodeLimits(max_turns=3))
    try:
        env.reset(TaskRecord("Write add.", {"asserts": ["assert add(2, 2) == 4, 'add(2, 2)'"]},
                             "code", "real"))
        reply = env.step("```python\ndef add(a, b):\n    return a * b + 1\n```")
        assert not reply.done
        assert "AssertionError: add(2, 2)" in reply.observation[0]["content"]
        done = env.step("```python\ndef add(a, b):\n    return a + b\n```")
        assert (done.done, done.reward) == (True, 1.0)
    finally:
        env.close()
    assert time.monotonic() - started < 30
