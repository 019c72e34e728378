"""`verifiers`: an environment of Prime Intellect's `verifiers` library (its classic API,
`verifiers.legacy` of release 0.3.1: `SingleTurnEnv`, `MultiTurnEnv`, `Rubric`, `Parser`)
played as rlvr episodes, its dataset rows as task records and its rubric as the reward
(the `verifiers` extra).

    python -m rlvr.environments.ecosystem.verifiers_env --module my_env \\
        --args '{"n": 200}' --out train.jsonl
    episodes:
      environment: verifiers
      options: {module: my_env, load: load_environment, args: {n: 200}}
    reward: {plugins: ["rlvr.environments.ecosystem.verifiers_env:VerifiersRowVerifier"]}

Only the operator's config names code: `module` and `load` (the function that returns the
environment, `load_environment` by the library's convention) and the keyword `args` it is
called with. A dataset row never does; it is data the rubric reads (answer, info, the
row's other columns), exactly as the library hands it to reward functions.

A record's prompt is the row's `prompt` messages (the library's formatting: system prompt
and question); its reference is `{"row": the other columns}`. Each episode builds the
library's rollout `State` from the record; the model's turn is recorded as the
trajectory's step; while the environment is not completed (its own stop conditions, or
rlvr's `episodes.max_turns`), `env_response` answers with the next messages; once it is,
the library renders the completion and the rubric scores it (`score_rollout`: each
reward function called with the arguments it names, the weighted sum is the reward).
`passed` is the reward reaching the environment's `pass_threshold`. The library is async:
each episode runs its coroutines on an event loop of its own.

Not carried over: tool calls (`ToolEnv` parses them from the API's structured message,
which a text turn has none of), group-level reward functions (they compare a group's
rollouts; rlvr grades each episode alone: refused), and environments that are not a
`MultiTurnEnv` (refused).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import re
import sys
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from rlvr.data.records import TaskRecord, write_records_jsonl
from rlvr.environments.ecosystem.optional import require
from rlvr.environments.options import OptionError, PREFIX, parse_options
from rlvr.environments.text import first_messages
from rlvr.episodes.base import EpisodeLimits, Message, Reply, ToolSpec
from rlvr.verifiers.base import InvalidReference, Verdict

NAME = "verifiers"
VERIFIER = "rlvr.environments.ecosystem.verifiers_env:VerifiersRowVerifier"
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OBSERVATION_ROLES = ("user", "tool", "system")


@dataclass(frozen=True)
class VerifiersOptions:
    """module: the Python module that defines the environment (the operator's code).
    load:   the function in it that returns the environment.
    args:   keyword arguments `load` is called with (JSON values)."""

    module: str = ""
    load: str = "load_environment"
    args: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not _DOTTED.fullmatch(self.module):
            raise ValueError(f"module must name a Python module (a.b.c), got {self.module!r}")
        if not _IDENTIFIER.fullmatch(self.load):
            raise ValueError(f"load must name a function of the module, got {self.load!r}")
        try:
            json.dumps(self.args, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"args must hold JSON values only ({exc})") from None


def _vf() -> Any:
    """verifiers' classic API (MissingExtra naming `rlvr[verifiers]` when absent)."""
    return require("verifiers.legacy", NAME, "the verifiers environment")


_LOADED: dict[str, Any] = {}
_LOAD_LOCK = threading.Lock()


def load_environment(options: VerifiersOptions) -> Any:
    """The environment `options` name, loaded once per process (episodes share it: the
    library keeps a rollout's state in its `State`, not on the environment)."""
    key = json.dumps([options.module, options.load, options.args], sort_keys=True)
    with _LOAD_LOCK:
        if key not in _LOADED:
            _LOADED[key] = _load(options)
        return _LOADED[key]


def _load(options: VerifiersOptions) -> Any:
    vf = _vf()
    try:
        module = importlib.import_module(options.module)
    except ImportError as exc:
        raise OptionError(f"{PREFIX}.module: cannot import {options.module!r} ({exc})") from None
    loader = getattr(module, options.load, None)
    if not callable(loader):
        raise OptionError(f"{PREFIX}.load: {options.module!r} has no function {options.load!r}")
    try:
        env = loader(**options.args)
    except TypeError as exc:  # an argument it does not take
        raise OptionError(f"{PREFIX}.args: {options.module}.{options.load}: {exc}") from None
    if not isinstance(env, vf.MultiTurnEnv):
        raise OptionError(f"{PREFIX}.load: {options.module}.{options.load} returned "
                          f"{type(env).__name__}, not a verifiers MultiTurnEnv/SingleTurnEnv")
    if env.rubric.has_group_rewards:
        raise OptionError(f"{PREFIX}.load: the rubric of {options.module}.{options.load} has "
                          "group-level reward functions; rlvr grades each episode alone")
    return env


def check_options(options: Mapping[str, Any] | None) -> VerifiersOptions:
    """The config loader's check: the options parsed and the environment loaded (so a
    wrong module, function or argument stops the run before the model loads)."""
    parsed = parse_options(VerifiersOptions, options, NAME)
    load_environment(parsed)
    return parsed


# -- records ---------------------------------------------------------------------------

def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _prompt_messages(prompt: Any, where: str) -> list[dict[str, str]]:
    """The row's prompt as plain {"role", "content"} messages (Arrow fills absent
    message fields with None; those are dropped)."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    out = []
    for message in prompt or []:
        role, content = message.get("role"), message.get("content")
        if role not in ("system", "user", "assistant") or not isinstance(content, str):
            raise ValueError(f"{where}: prompt message {message!r:.200} is not a text "
                             "message (role system/user/assistant, content a string)")
        out.append({"role": role, "content": content})
    if not out:
        raise ValueError(f"{where}: empty prompt")
    return out


def records(env: Any, split: str = "train", limit: int = 0, prefix: str = "vf"
            ) -> list[TaskRecord]:
    """The environment's dataset (`split` "train" or "eval") as task records graded, in
    the `verifiers` environment, by its rubric (`limit` > 0: the first `limit` rows)."""
    dataset = env.get_dataset(n=limit) if split == "train" else env.get_eval_dataset(n=limit)
    out = []
    for index, row in enumerate(dataset):
        where = f"verifiers dataset ({split}) row {index}"
        rest = _json_safe({k: v for k, v in row.items() if k != "prompt"})
        out.append(TaskRecord(prompt=_prompt_messages(row["prompt"], where),
                              reference={"row": rest}, verifier=VERIFIER,
                              id=f"{prefix}-{split}-{row.get('example_id', index)}",
                              metadata={"source": "verifiers", "split": split}))
    return out


class VerifiersRowVerifier:
    """The records' verifier name (a plugin: list it in `reward.plugins`). It checks a
    record's reference; the grading itself is the rubric's, inside the `verifiers`
    environment, which gives every episode it ends a reward. Outside it (a one-turn run
    on these records) there is no rubric to call, and the verdict says so."""

    name = "verifiers_row"
    default_timeout_s = 5.0

    def check_reference(self, reference: Any) -> None:
        if not isinstance(reference, dict) or not isinstance(reference.get("row"), dict):
            raise InvalidReference("expected {'row': {...}} (a verifiers dataset row)")

    def verify(self, completion: str, reference: Any) -> Verdict:
        self.check_reference(reference)
        return Verdict.wrong("needs_verifiers_environment",
                             note="graded by the rubric in episodes.environment: verifiers")


# -- episodes --------------------------------------------------------------------------

def _text(content: Any) -> str:
    """A message's content as text (the text parts of a multi-part content)."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    texts = [p.get("text") if isinstance(p, dict) else getattr(p, "text", None) for p in parts]
    return "\n".join(t for t in texts if isinstance(t, str))


def _field(message: Any, name: str) -> Any:
    return message.get(name) if isinstance(message, dict) else getattr(message, name, None)


class VerifiersEpisode:
    """One episode of a verifiers MultiTurnEnv (see the module docstring)."""

    tools: tuple[ToolSpec, ...] = ()

    def __init__(self, env: Any, limits: EpisodeLimits) -> None:
        self.env, self.limits = env, limits
        self._loop: asyncio.AbstractEventLoop | None = None
        self._state: Any = None
        self._prompt: list[Any] = []  # the library's messages before the model's next turn

    def _run(self, coroutine: Any) -> Any:
        assert self._loop is not None, "reset() first"
        return self._loop.run_until_complete(coroutine)

    def reset(self, task: TaskRecord) -> list[Message]:
        VerifiersRowVerifier().check_reference(task.reference)
        self._loop = asyncio.new_event_loop()
        self._state = self._run(self._new_state(task))
        self._prompt = list(self._state["prompt"])
        return first_messages(task)

    async def _new_state(self, task: TaskRecord) -> Any:
        """The library's rollout state for this row, as its `init_state` builds it (less
        the client and model, which are rlvr's here), then the environment's setup."""
        vf = _vf()
        from verifiers.legacy.types import RolloutTiming, flatten_task_input
        from verifiers.legacy.utils.message_utils import normalize_messages

        row = json.loads(json.dumps(task.reference["row"]))  # a copy the rubric may change
        if isinstance(row.get("info"), str):
            row["info"] = json.loads(row["info"])
        row["prompt"] = [dict(m) for m in task.prompt] if isinstance(task.prompt, list) \
            else task.prompt
        state = vf.State(input=row)
        state["task"] = flatten_task_input(row)
        state["prompt"] = normalize_messages(row["prompt"], field_name="input.prompt")
        state.update(model="rlvr-policy", sampling_args=None, is_completed=False,
                     is_truncated=False, tool_defs=[], trajectory=[], completion=None,
                     trajectory_id=uuid.uuid4().hex, reward=None, metrics=None, error=None,
                     final_env_response=None, timing=RolloutTiming())
        self.env._get_usage_tracker(state, create_if_missing=True)
        ready = await self.env.setup_state(state)
        return state if ready is None else ready

    def step(self, turn: str) -> Reply:
        from verifiers.legacy.utils.message_utils import normalize_messages

        state = self._state
        completion = normalize_messages([{"role": "assistant", "content": turn}])
        state["trajectory"].append({
            "prompt": self._prompt, "completion": completion, "response": None,
            "tokens": None, "reward": None, "advantage": None, "is_truncated": False,
            "trajectory_id": state["trajectory_id"], "extras": {}})
        if (len(state["trajectory"]) >= self.limits.max_turns
                or self._run(self.env.is_completed(state))):
            return self._finish()
        messages = [*self._prompt, *completion]
        answer = normalize_messages(self._run(self.env.env_response(messages, state)),
                                    field_name="env_response")
        if state.get("final_env_response") is not None:
            return self._finish()
        self._prompt = [*messages, *answer]
        observation = []
        for message in answer:
            role = _field(message, "role")
            if role not in _OBSERVATION_ROLES:
                raise ValueError(f"env_response returned a {role!r} message")
            observation.append({"role": role, "content": _text(_field(message, "content"))})
        return Reply(observation, None, False, {})

    def _finish(self) -> Reply:
        """The library's end of a rollout: its cleanup (which renders the completion),
        then the rubric's score."""
        state = self._state
        self._run(self.env.cleanup(state))
        self._run(self.env.rubric.score_rollout(state))
        reward = float(state["reward"])
        parsed = self.env.parser.parse_answer(state["completion"])
        info = {"passed": reward >= float(self.env.pass_threshold),
                "verifiers_metrics": {k: float(v) for k, v in (state["metrics"] or {}).items()},
                "parsed_answer": None if parsed is None else str(parsed)[:200],
                "stop_condition": state.get("stop_condition")}
        return Reply([], reward, True, info)

    def close(self) -> None:
        loop, self._loop, self._state = self._loop, None, None
        if loop is not None and not loop.is_running():  # a hung call keeps its loop
            loop.close()


def make(record: TaskRecord, options: dict[str, Any], limits: EpisodeLimits
         ) -> VerifiersEpisode:
    """The registry's factory: a fresh episode over the (shared) loaded environment."""
    del record  # the task reaches the episode through reset()
    return VerifiersEpisode(load_environment(parse_options(VerifiersOptions, options, NAME)),
                            limits)


# -- command line ----------------------------------------------------------------------

write_jsonl = write_records_jsonl  # the `--out` file (rlvr.data.records)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write a verifiers environment's dataset "
                                     "as rlvr records")
    parser.add_argument("--module", required=True)
    parser.add_argument("--load", default="load_environment")
    parser.add_argument("--args", default="{}", help="JSON object of keyword arguments")
    parser.add_argument("--split", choices=("train", "eval"), default="train")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    options = check_options({"module": args.module, "load": args.load,
                             "args": json.loads(args.args)})
    items = records(load_environment(options), args.split, args.limit,
                    prefix=args.module.rsplit(".", 1)[-1])
    write_jsonl(items, args.out)
    print(f"{len(items)} records -> {args.out} (verifier {VERIFIER}: list it in "
          "reward.plugins; episodes.environment: verifiers with the same options)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
