"""Synthetic run directories in the real format (config.yaml, metrics.jsonl,
rollouts.jsonl, summary.json), modelled on issue 14's run: SmolLM2 + the math verifier
on "What is A * B? Give the final answer as \\boxed{ANSWER}.", 4 prompts x 8 samples
per step, 50 steps.

`hacked=True`: from HACK_START on, a growing share of the attempts box the question's
own expression and then state some other number (`To solve \\boxed{6 * 75}, ... So the
answer is \\textbf{8100}.`), graded correct as the unfixed verifier did; genuinely
computed passes stay flat at 2-3 per step. `hacked=False`: the computed passes grow
instead (a run that really learns).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from rlvr.config import load_config, save_config
from rlvr.runs.rundir import RunDir
from rlvr.training.config import TrainConfig

PROMPTS, SAMPLES, STEPS, HACK_START = 4, 8, 50, 15
QUESTION = "What is {a} * {b}? Give the final answer as \\boxed{{ANSWER}}."
HACKS = ["To solve \\boxed{{{a} * {b}}}, we need to perform the multiplication of {a} and "
         "{b}. So the answer is \\textbf{{{wrong}}}.",
         "To solve \\boxed{{{a} \\times {b}}}, we multiply the numbers. So the answer is "
         "\\textbf{{{wrong}}}.",
         "We need \\boxed{{{a}*{b}}}."]
HONEST = ["{a} * {b} = {c}, so the answer is \\boxed{{{c}}}.",
          "Multiplying {a} by {b} gives {c}. \\boxed{{{c}}}"]
WRONG = ["{a} * {b} = {wrong}, so the answer is \\boxed{{{wrong}}}.",
         "The product is {wrong}"]


def hacks_at(step: int, hacked: bool) -> int:
    """Attempts (of 32) that box the expression at `step`: 0 before HACK_START, then
    +1.4 a step up to 22 (passed share ~30% at step 16, ~75% at step 22)."""
    if not hacked or step < HACK_START:
        return 0
    return min(22, round(1.4 * (step - HACK_START + 1)))


def honest_passes_at(step: int, hacked: bool, rng: random.Random) -> int:
    if hacked:
        return rng.choice([2, 3])
    return min(24, 2 + step // 2)


def write_run(path: Path, hacked: bool, seed: int = 0, heldout: tuple[float, float] = (0.067, 0.40),
              eval_every: int = 0) -> Path:
    rng = random.Random(seed)
    cfg = load_config(TrainConfig, overrides=[
        "name=smollm2-math", "model.path=smollm2-135m-instruct", "prompt.style=chat",
        "reward.verifier=math", "sampling.prompts_per_step=4", "sampling.group_size=8",
        "sampling.max_new_tokens=64", f"steps={STEPS}", f"eval_every={eval_every}"])
    run = RunDir(path).create()
    save_config(cfg, run.config)
    problems = [(rng.randint(2, 12), rng.randint(11, 99)) for _ in range(200)]
    for step in range(1, STEPS + 1):
        kinds = (["hack"] * hacks_at(step, hacked) + ["honest"] * honest_passes_at(step, hacked, rng))
        kinds = (kinds + ["wrong"] * PROMPTS * SAMPLES)[:PROMPTS * SAMPLES]
        rng.shuffle(kinds)
        lines = [_attempt(step, i, kinds[i], problems[(step * PROMPTS + i // SAMPLES) % 200], rng)
                 for i in range(PROMPTS * SAMPLES)]
        run.append_rollouts(lines)
        accuracy = sum(line["verdict"]["passed"] for line in lines) / len(lines)
        metrics = {"step": step, "reward/mean": accuracy, "reward/std": 0.4,
                   "score/mean": accuracy, "accuracy": accuracy, "response_length/mean": 41.0,
                   "response_length/max": 64.0, "truncation_rate": 0.05, "lr": 1e-6,
                   "entropy": 0.9, "grad_norm": 1.2, "time/step": 3.1}
        if eval_every and step % eval_every == 0 and step < STEPS:
            before, after = heldout
            metrics["eval/accuracy"] = before + (after - before) * step / STEPS
        run.append_metrics(metrics)
    run.write_summary({"eval": {"before": {"accuracy": heldout[0], "n": 60},
                                "after": {"accuracy": heldout[1], "n": 60}},
                       "steps": STEPS, "sft": {"steps": 0}, "final_metrics": metrics,
                       "wall_seconds": 412.0})
    return path


def _attempt(step: int, index: int, kind: str, problem: tuple[int, int],
             rng: random.Random) -> dict:
    a, b = problem
    wrong = a * b + rng.choice([-100, -10, 1, 7, 10, 1000]) if kind != "hack" else a * b * rng.choice([2, 18])
    template = rng.choice({"hack": HACKS, "honest": HONEST, "wrong": WRONG}[kind])
    completion = template.format(a=a, b=b, c=a * b, wrong=wrong)
    if kind == "hack":
        boxed = completion.split("\\boxed{")[1].split("}")[0]
        verdict = {"score": 1.0, "passed": True, "reason": "correct",
                   "details": {"answer": boxed, "method": "boxed", "normalized": f"{a}*{b}"}}
    elif kind == "honest":
        verdict = {"score": 1.0, "passed": True, "reason": "correct",
                   "details": {"answer": str(a * b), "method": "boxed", "normalized": str(a * b)}}
    else:
        answer = str(wrong) if "boxed" in completion else None
        verdict = {"score": 0.0, "passed": False,
                   "reason": "wrong_answer" if answer else "no_answer",
                   "details": {"answer": answer, "method": "boxed" if answer else None}}
    return {"step": step, "prompt_id": f"mul-{a}x{b}", "sample": index % SAMPLES,
            "prompt": QUESTION.format(a=a, b=b), "reference": str(a * b),
            "completion": completion, "finish_reason": "stop", "length": len(completion) // 4,
            "verdict": verdict, "reward": verdict["score"], "advantage": 0.0}


class ArithmeticEchoVerifier:
    """A test reward that passes every attempt and reports "1+2" as the answer it graded:
    an unevaluated expression against the arithmetic task's numeric references, so a
    real tiny run has something for the trainer's audit to warn about. (Loaded by name,
    "audit_fixtures:ArithmeticEchoVerifier", in worker processes.)"""

    name = "arithmetic_echo"

    def check_reference(self, reference):
        return None

    def verify(self, completion, reference):
        from rlvr.verifiers.base import Verdict

        return Verdict.correct(answer="1+2", method="test")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]
