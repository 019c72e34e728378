"""Run a batch of episodes turn by turn: P tasks x G episodes, batched per turn.

    turn 1:  every group's shared first prompt, one `generate_ids(prompts, n=G)` call
    turn k:  every episode still running, of the whole batch, one `generate_ids(n=1)` call
    between: every environment's `step` at once, each with its own deadline (calls.py;
             one whose calls cannot block, `runs_inline = True`, is called in place)

An episode's tokens are the first prompt's ids, then the model's sampled ids and the
environment's observation ids interleaved exactly as the model saw them (render.py
writes the environment's; the model's are never re-tokenized). `loss_mask` marks the
model's (1) and the environment's (0); log-probs are 0 on the environment's.

Limits (the environment's `limits`): `max_turns` model turns; `max_tokens` tokens after
the first prompt, the model's and the environment's (a turn samples at most
min(params.max_new_tokens, what is left)); `step_timeout_s` per reset / step / close.

End reasons and rewards:
    done            the environment said so: the sum of the rewards it gave (None when
                    it gave none: the verifier grades `final_text`)
    max_turns       out of turns: as for done
    max_tokens      no room left for the next observation and a model token: 0
    env_timeout     reset or step ran past step_timeout_s: 0
    env_error: ...  the environment (or its factory) raised: 0
    bad_observation: ...  malformed messages or Reply, or messages the template cannot
                    render, or first messages that differ within a group: 0
A fault ends only its episode; the batch goes on. What the model wrote (a malformed tool
call) is the environment's to answer. docs/contracts.md, "Episodes".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from rlvr.data.records import TaskRecord, prompt_text
from rlvr.episodes.base import Environment, EpisodeLimits, Message, Reply
from rlvr.episodes.calls import Outcome, call_all
from rlvr.episodes.render import (Conversation, FirstPrompt, PromptError, TurnRenderer,
                                  message_problem)
from rlvr.errors import ExternalFault, UserError
from rlvr.rollout.base import Completion, RolloutEngine, SamplingParams

FIRST_ROLES = ("system", "user", "assistant", "tool")  # a reset may hold a worked example
_MAX_REASON = 300  # characters of an error kept in end_reason


class EpisodeError(UserError, RuntimeError):
    """Episodes cannot run with this engine (names what it lacks)."""


@dataclass
class Episode:
    """One episode. completion: prompt_ids = the first prompt's, token_ids = everything
    after it (model and environment tokens interleaved), loss_mask (None for one turn
    with no environment tokens: then the engine's own Completion); text = final_text.
    reward: None = the environment leaves grading to the verifier on final_text.
    final_text: the model's last turn's text. messages: the transcript. info:
    tool_calls, tool_errors, env_seconds, turn_rewards, env_info (each reply's info)."""

    completion: Completion
    reward: float | None
    final_text: str
    messages: list[Message]
    turns: int
    end_reason: str
    info: dict[str, Any]

    @property
    def model_tokens(self) -> int:
        mask = self.completion.loss_mask
        return len(self.completion.token_ids) if mask is None else sum(mask)

    @property
    def env_tokens(self) -> int:
        return len(self.completion.token_ids) - self.model_tokens


@dataclass
class _Run:
    """One episode while it runs."""

    record: TaskRecord
    env: Any = None
    limits: EpisodeLimits = field(default_factory=EpisodeLimits)
    messages: list[Message] = field(default_factory=list)
    first: FirstPrompt | None = None
    conversation: Conversation | None = None
    ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    samples: list[Completion] = field(default_factory=list)
    rewards: list[float | None] = field(default_factory=list)
    env_info: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=lambda: {
        "tool_calls": 0, "tool_errors": 0, "env_seconds": 0.0})
    end: str = ""
    reward: float | None = None

    @property
    def live(self) -> bool:
        return not self.end

    @property
    def remaining(self) -> int:
        return self.limits.max_tokens - len(self.ids)

    def finish(self, reason: str, reward: float | None = 0.0) -> None:
        self.end, self.reward = reason[:_MAX_REASON], reward


def run_episodes(engine: RolloutEngine, turns: TurnRenderer,
                 make_env: Callable[[TaskRecord], Environment], records: Sequence[TaskRecord],
                 group_size: int, params: SamplingParams) -> list[list[Episode]]:
    """[P][G] episodes of `records`, G per record (see the module docstring)."""
    groups = [[_start(make_env, record) for _ in range(group_size)] for record in records]
    try:
        _reset(groups, turns)
        _first_turn(engine, groups, group_size, params, turns)
        turn = 1
        while live := [run for group in groups for run in group if run.live]:
            turn += 1
            _later_turn(engine, live, turn, params, turns)
    finally:
        _close([run for group in groups for run in group])
        if hasattr(engine, "prefixes"):  # kept keys/values no later turn continues
            engine.prefixes.clear()
    greedy = params.temperature <= 0
    return [[_episode(run, greedy) for run in group] for group in groups]


def _start(make_env: Callable[[TaskRecord], Environment], record: TaskRecord) -> _Run:
    run = _Run(record)
    try:
        run.env = make_env(record)
        run.limits = run.env.limits
    except ExternalFault:
        raise  # a remote environment that is gone stops the run (episodes/calls.py)
    except Exception as exc:  # noqa: BLE001 - the factory's fault ends this episode only
        run.finish(f"env_error: {type(exc).__name__}: {exc}")
    return run


def _reset(groups: list[list[_Run]], turns: TurnRenderer) -> None:
    """Every environment's first messages (at once); each group's shared first prompt."""
    runs = [run for group in groups for run in group if run.live]
    outcomes = call_all([lambda run=run: run.env.reset(run.record) for run in runs],
                        [run.limits.step_timeout_s for run in runs], _inline(runs))
    for run, outcome in zip(runs, outcomes):
        run.counts["env_seconds"] += outcome.seconds
        if _faulted(run, outcome):
            continue
        problem = message_problem(outcome.value, FIRST_ROLES)
        if problem:
            run.finish(f"bad_observation: first messages: {problem}")
        else:
            run.messages = [dict(m) for m in outcome.value]
    for group in groups:
        _share_first_prompt(group, turns)


def _share_first_prompt(group: list[_Run], turns: TurnRenderer) -> None:
    """The group's prompt: the first environment's messages, rendered once; an episode
    whose environment opened otherwise cannot share the group's samples."""
    shared: FirstPrompt | None = None
    opening: tuple[list[Message], Any] | None = None
    for run in group:
        if not run.live:
            continue
        mine = (run.messages, tuple(getattr(run.env, "tools", ()) or ()))
        if opening is None:
            try:
                shared = turns.first_prompt(mine[0], mine[1], run.record.id)
            except PromptError as exc:
                run.finish(f"bad_observation: {exc}")
                continue
            opening = mine
        elif mine != opening:
            run.finish("bad_observation: first messages differ from the group's")
            continue
        run.first = shared
        run.conversation = Conversation([dict(m) for m in shared.conversation.messages],
                                        shared.conversation.tools)
    if shared is None:  # no episode opened: the record's own prompt stands in
        record = group[0].record
        shared = turns.first_prompt([{"role": "user", "content": prompt_text(record)}],
                                    (), record.id)
    for run in group:
        run.first = run.first or shared


def _first_turn(engine: RolloutEngine, groups: list[list[_Run]], group_size: int,
                params: SamplingParams, turns: TurnRenderer) -> None:
    """One call for every group with a live episode: its prompt, n = G."""
    sampled = [group for group in groups if any(run.live for run in group)]
    if not sampled:
        return
    call = _turn_params(params, [run for group in sampled for run in group if run.live])
    prompts = [group[0].first for group in sampled]
    if hasattr(engine, "generate_ids"):
        out = engine.generate_ids([p.ids for p in prompts], group_size, call)
    else:  # an engine of text only (a test's fake) still runs one-turn episodes
        out = engine.generate([p.text for p in prompts], group_size, call)
    taken = []
    for group, samples in zip(sampled, out):
        for run, sample in zip(group, samples):
            if run.live:
                _take(run, sample, turns)
                taken.append(run)
    _respond(taken, turns)


def _later_turn(engine: RolloutEngine, live: list[_Run], turn: int, params: SamplingParams,
                turns: TurnRenderer) -> None:
    """One call for every running episode of the batch: its context so far, n = 1."""
    if not hasattr(engine, "generate_ids"):
        raise EpisodeError(f"the rollout engine {type(engine).__name__} has no "
                           "generate_ids: episodes of more than one turn need it "
                           "(rlvr.rollout.base.RolloutEngine)")
    seed = None if params.seed is None else (params.seed + 1_000_003 * (turn - 1)) % (2**63 - 1)
    call = _turn_params(replace(params, seed=seed), live)
    out = engine.generate_ids([run.first.ids + run.ids for run in live], 1, call)
    for run, samples in zip(live, out):
        _take(run, samples[0], turns)
    _respond(live, turns)


def _turn_params(params: SamplingParams, runs: list[_Run]) -> SamplingParams:
    """A turn samples at most max_new_tokens, and no more than any episode has left
    (an episode with less is cut after sampling: `_take`). While an episode may have a
    next turn, the engine keeps its rows' keys/values for it (`keep_prefix`)."""
    room = max(run.remaining for run in runs)
    more = any(len(run.samples) + 1 < run.limits.max_turns for run in runs)
    return replace(params, max_new_tokens=max(1, min(room, params.max_new_tokens)),
                   keep_prefix=more)


def _take(run: _Run, sample: Completion, turns: TurnRenderer) -> None:
    """The model's turn joins the episode, cut to the tokens the episode has left."""
    if len(sample.token_ids) > run.remaining:
        ids = sample.token_ids[:run.remaining]
        sample = Completion(prompt_ids=sample.prompt_ids, token_ids=ids,
                            logprobs=sample.logprobs[:len(ids)], text=turns.decode(ids),
                            finish_reason="length")
    run.samples.append(sample)
    run.ids += sample.token_ids
    run.logprobs += sample.logprobs or [0.0] * len(sample.token_ids)
    run.mask += [1] * len(sample.token_ids)
    run.messages.append({"role": "assistant", "content": sample.text})


def _respond(runs: list[_Run], turns: TurnRenderer) -> None:
    """Every environment's reply to its model's turn (at once), then each episode's
    next observation or its end."""
    outcomes = call_all([lambda run=run: run.env.step(run.samples[-1].text) for run in runs],
                        [run.limits.step_timeout_s for run in runs], _inline(runs))
    for run, outcome in zip(runs, outcomes):
        run.counts["env_seconds"] += outcome.seconds
        if _faulted(run, outcome):
            continue
        reply: Reply = outcome.value
        problem = reply_problem(reply)
        if problem:
            run.finish(f"bad_observation: {problem}")
            continue
        run.rewards.append(None if reply.reward is None else float(reply.reward))
        run.env_info.append(reply.info)
        for key in ("tool_calls", "tool_errors"):
            run.counts[key] += reply.info.get(key, 0)
        _advance(run, reply, turns)


def _advance(run: _Run, reply: Reply, turns: TurnRenderer) -> None:
    given = [r for r in run.rewards if r is not None]
    total = sum(given) if given else None
    if reply.done:
        return run.finish("done", total)
    if len(run.samples) >= run.limits.max_turns:
        return run.finish("max_turns", total)
    last = run.samples[-1]
    try:
        delta = turns.observation_ids(run.conversation, last.text,
                                      last.token_ids[-1] if last.token_ids else None,
                                      reply.observation)
    except PromptError as exc:
        return run.finish(f"bad_observation: {exc}")
    if len(delta) >= run.remaining:  # no room for the observation and one model token
        return run.finish("max_tokens")
    run.ids += delta
    run.logprobs += [0.0] * len(delta)
    run.mask += [0] * len(delta)
    run.messages += [dict(m) for m in reply.observation]


def _inline(runs: list[_Run]) -> list[bool]:
    """Environments that declare their calls cannot block (`runs_inline = True`) are
    called in this thread, without a deadline (calls.py)."""
    return [getattr(run.env, "runs_inline", False) is True for run in runs]


def _faulted(run: _Run, outcome: Outcome) -> bool:
    if outcome.timed_out:
        run.finish("env_timeout")
    elif outcome.error:
        run.finish(f"env_error: {outcome.error}")
    return not run.live


def reply_problem(reply: Any) -> str:
    """Why an environment's answer is not a well-formed Reply, or ""."""
    if not isinstance(reply, Reply):
        return f"step returned {type(reply).__name__}, not a Reply"
    if not isinstance(reply.done, bool):
        return f"done is {type(reply.done).__name__}, not bool"
    r = reply.reward
    if r is not None and (isinstance(r, bool) or not isinstance(r, (int, float))
                          or not math.isfinite(r)):
        return f"reward {r!r} is not a finite number or None"
    if not isinstance(reply.info, dict):
        return f"info is {type(reply.info).__name__}, not a dict"
    for key in ("tool_calls", "tool_errors"):
        value = reply.info.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"info[{key!r}] must be a count, got {value!r}"
    problem = message_problem(reply.observation)
    if problem:
        return f"observation: {problem}"
    if not reply.done and not reply.observation:
        return "no observation on a turn that is not done"
    return ""


def _close(runs: list[_Run]) -> None:
    opened = [run for run in runs if run.env is not None]
    outcomes = call_all([lambda run=run: run.env.close() for run in opened],
                        [run.limits.step_timeout_s for run in opened], _inline(opened))
    for run, outcome in zip(opened, outcomes):
        run.counts["env_seconds"] += outcome.seconds
        if outcome.error or outcome.timed_out:
            run.counts["close_error"] = outcome.error or "timeout"


def _episode(run: _Run, greedy: bool) -> Episode:
    final = run.samples[-1] if run.samples else None
    one_turn = len(run.samples) == 1 and len(run.ids) == len(final.token_ids)
    if one_turn and final.prompt_ids == run.first.ids:
        completion = final  # as the engine sampled it (kept activations included)
    else:
        completion = Completion(prompt_ids=list(run.first.ids), token_ids=run.ids,
                                logprobs=[] if greedy else run.logprobs,
                                text=final.text if final else "",
                                finish_reason=final.finish_reason if final else "stop",
                                loss_mask=None if one_turn or not run.ids else run.mask)
    info = {**run.counts, "turn_rewards": run.rewards, "env_info": run.env_info}
    return Episode(completion, run.reward, completion.text, run.messages, len(run.samples),
                   run.end, info)
