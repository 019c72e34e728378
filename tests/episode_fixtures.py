"""A hand-built multi-turn run directory in the trainer's format (config.yaml,
metrics.jsonl with the episode/* metrics, rollouts.jsonl lines with their `episode`
block; docs/contracts.md, "Episodes"): the `python_tool` environment on "What is
A ** B?", graded by the math verifier on the model's own last message.

Per step, PROMPTS prompts x SAMPLES samples:
  sample 0  honest: a tool call, its result, then "The answer is \\boxed{N}." (passed)
  sample 1  wrong: a tool call, its result, then a wrong box (failed)
  sample 2  the environment timed out on the first tool call (reward 0, failed)
  sample 3  before HACK_START: "\\boxed{N}" in one turn, no tool (passed). From
            HACK_START on, `hacked=True`: the tool prints N and the model's last
            message states nothing ("Done: the tool printed it."), paid anyway (the
            answer only in a tool result); `hacked=False`: the honest two-turn answer.
With `hacked=True`, one more kind at FAULT_STEP: prompt 0's sample 2 ends on an
environment error and is paid (reward 1, its verdict failed), prompt 1's sample 2 too
(reward 1, passed): an environment fault counted as a pass, twice.

Prompt 0's tool results come back as user messages ("[python tool result]", a template
without a tool role), prompt 1's as role "tool" messages.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlvr.config import load_config, save_config
from rlvr.runs.rundir import RunDir
from rlvr.training.config import TrainConfig

PROMPTS, SAMPLES, STEPS, HACK_START, FAULT_STEP, MAX_TURNS = 2, 4, 12, 6, 9, 3
QUESTION = "What is {a} ** {b}? Give the final answer as \\boxed{{ANSWER}}."
HONEST = "The answer is \\boxed{{{n}}}."
HACK = "Done: the tool printed it."
END_KINDS = ("done", "max_turns", "max_tokens", "env_timeout", "env_error", "bad_observation")


def problem(step: int, p: int) -> tuple[int, int]:
    return 2 + (step + p) % 5, 2 + (step * 3 + p) % 7


def tool_call(a: int, b: int) -> str:
    call = {"name": "python", "arguments": {"code": f"print({a} ** {b})"}}
    return f"<tool_call>{json.dumps(call)}</tool_call>"


def tool_result(p: int, output: str) -> dict[str, Any]:
    if p == 0:
        return {"role": "user", "content": f"[python tool result]\n{output}"}
    return {"role": "tool", "name": "python", "content": output}


def kind_of(step: int, p: int, sample: int, hacked: bool) -> str:
    if sample == 0:
        return "honest"
    if sample == 1:
        return "wrong"
    if sample == 2:
        return "paid_fault" if hacked and step == FAULT_STEP else "timeout"
    if step < HACK_START:
        return "one_turn"
    return "hack" if hacked else "honest"


def episode_line(step: int, p: int, sample: int, kind: str,
                 output: str | None = None) -> dict[str, Any]:
    """One attempt of `kind` (see the module docstring); `output`: the tool's printed
    text (default: the right value)."""
    a, b = problem(step, p)
    n = a ** b
    prompt = QUESTION.format(a=a, b=b)
    first = [{"role": "user", "content": prompt}]
    printed = str(n) if output is None else output
    two_turns = first + [{"role": "assistant", "content": tool_call(a, b)},
                         tool_result(p, printed)]
    if kind in ("honest", "wrong", "hack"):
        final = {"honest": HONEST.format(n=n), "wrong": HONEST.format(n=n + 1),
                 "hack": HACK}[kind]
        messages = two_turns + [{"role": "assistant", "content": final}]
        passed = kind != "wrong"
        episode = _block(2, "done", messages, [None, 1.0 if passed else 0.0], calls=1)
        details = {"answer": str(n if kind == "honest" else n + 1)} if kind != "hack" else {}
        verdict = {"score": float(passed), "passed": passed,
                   "reason": "environment", "details": details}
        return _line(step, p, sample, prompt, str(n), final, verdict, episode)
    if kind == "one_turn":
        final = f"\\boxed{{{n}}}"
        verdict = {"score": 1.0, "passed": True, "reason": "environment",
                   "details": {"answer": str(n)}}
        return _line(step, p, sample, prompt, str(n), final, verdict,
                     _block(1, "done", None, None, calls=0))
    # an environment fault on the first tool call: one turn, no environment tokens
    end = "env_timeout" if kind == "timeout" else "env_error: RuntimeError: sandbox died"
    reward = 1.0 if kind == "paid_fault" else 0.0
    passed = kind == "paid_fault" and p == 1
    verdict = {"score": reward, "passed": passed, "reason": end.split(":", 1)[0],
               "details": {"reward": reward, "end_reason": end}}
    return _line(step, p, sample, prompt, str(n), tool_call(a, b), verdict,
                 _block(1, end, None, None, calls=1), reward=reward)


def _block(turns: int, end: str, messages: list | None, rewards: list | None,
           calls: int) -> dict[str, Any]:
    block = {"turns": turns, "end_reason": end, "model_tokens": 12 * turns,
             "env_tokens": 9 if messages else 0,
             "reward_source": "environment", "tool_calls": calls, "tool_errors": 0}
    if messages is not None:
        block["messages"], block["turn_rewards"] = messages, rewards
    return block


def _line(step: int, p: int, sample: int, prompt: str, reference: str, completion: str,
          verdict: dict[str, Any], episode: dict[str, Any],
          reward: float | None = None) -> dict[str, Any]:
    return {"step": step, "prompt_id": f"pow-{p}-{step}", "sample": sample,
            "prompt": prompt, "reference": reference, "completion": completion,
            "finish_reason": "eos", "length": episode["model_tokens"] + episode["env_tokens"],
            "verdict": verdict, "reward": verdict["score"] if reward is None else reward,
            "advantage": 0.0, "episode": episode}


def step_metrics(step: int, lines: list[dict[str, Any]]) -> dict[str, Any]:
    """The episode/* metrics of a step's lines, as rlvr.training.episode_metrics
    computes them from its episodes (success: reward > 0)."""
    n = len(lines)
    blocks = [line["episode"] for line in lines]
    metrics = {"step": step, "reward/mean": sum(line["reward"] for line in lines) / n,
               "accuracy": sum(line["verdict"]["passed"] for line in lines) / n,
               "episode/turns_mean": sum(b["turns"] for b in blocks) / n,
               "episode/tool_calls_mean": sum(b["tool_calls"] for b in blocks) / n,
               "episode/tool_errors_mean": 0.0, "episode/env_seconds": 0.5}
    for k in range(1, MAX_TURNS + 1):
        metrics[f"episode/success_by_turn_{k}"] = sum(
            1 for line in lines if line["reward"] > 0 and line["episode"]["turns"] == k) / n
    kinds = [b["end_reason"].split(":", 1)[0] for b in blocks]
    for kind in END_KINDS:
        metrics[f"episode/end_{kind}"] = kinds.count(kind) / n
    return metrics


def write_episode_run(path: Path, hacked: bool) -> Path:
    cfg = load_config(TrainConfig, overrides=[
        "name=python-tool", "model.path=smollm2-135m-instruct", "prompt.style=chat",
        "reward.verifier=math", f"sampling.prompts_per_step={PROMPTS}",
        f"sampling.group_size={SAMPLES}", "sampling.max_new_tokens=64", f"steps={STEPS}",
        "episodes.environment=python_tool", f"episodes.max_turns={MAX_TURNS}"])
    run = RunDir(path).create()
    save_config(cfg, run.config)
    for step in range(1, STEPS + 1):
        lines = [episode_line(step, p, s, kind_of(step, p, s, hacked))
                 for p in range(PROMPTS) for s in range(SAMPLES)]
        run.append_rollouts(lines)
        run.append_metrics(step_metrics(step, lines))
    run.write_summary({"steps": STEPS})
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]
