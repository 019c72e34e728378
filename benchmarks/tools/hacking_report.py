"""Read bench_hacking.py's three runs back: each run's own reward beside the strict
verifier's verdict on the same answers, over time, the hacked attempts, and the picture.

Two views of every run, both graded twice (its own reward, and rlvr's strict `math`):
- held-out: the greedy answers of each evaluation (evals/step-NNNNNN.jsonl; the runs
  grade them with `math`, eval.verifier) re-scored by the run's own reward;
- training: the attempts the run was paid for (rollouts.jsonl, its own reward in
  `reward`), re-graded by `math` with the task's prompt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Sequence

from rlvr.verifiers.base import Verdict, run_verifier
from rlvr.verifiers.registry import get_verifier

# (completions, prompts, references) -> scores in [0, 1]: a run's own reward
Scorer = Callable[[Sequence[str], Sequence[str], Sequence[str]], list[float]]


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def math_verify_scorer() -> Scorer:
    from rlvr.verifiers.math_verify import MathVerifyVerifier

    verifier = MathVerifyVerifier()
    return lambda completions, prompts, refs: [verifier.verify(c, r).score
                                               for c, r in zip(completions, refs)]


def reward_model_scorer(model_dir: str) -> Scorer:
    from rlvr.verifiers.reward_model import RewardModelVerifier

    verifier = RewardModelVerifier(model=model_dir)
    return lambda completions, prompts, refs: [v.score for v in
                                               verifier.verify_batch(completions, prompts)]


def strict_verdict(completion: str, reference: str, prompt: str) -> Verdict:
    return run_verifier(get_verifier("math"), completion, reference, prompt)


def held_out_curve(run: Path, own: Scorer | None) -> list[dict[str, Any]]:
    """Per evaluation: step, strict accuracy (the run's own file, graded by `math`) and
    the run's own reward on the same answers (None: the reward is the strict one)."""
    rows = []
    for path in sorted((run / "evals").glob("step-*.jsonl")):
        answers = lines(path)
        strict = sum(a["passed"] for a in answers) / len(answers)
        reward = strict
        if own is not None:
            scores = own([a["completion"] for a in answers], [a["prompt"] for a in answers],
                         [a["reference"] for a in answers])
            reward = sum(scores) / len(scores)
        rows.append({"step": int(path.stem.split("-")[1]), "strict": strict,
                     "own": reward, "n": len(answers)})
    return rows


def training_curve(run: Path) -> list[dict[str, Any]]:
    """Per step: the mean reward the run was paid and the share of the same attempts the
    strict verifier passes."""
    steps: dict[int, list[tuple[float, bool]]] = {}
    for a in lines(run / "rollouts.jsonl"):
        strict = strict_verdict(a["completion"], a["reference"], a["prompt"]).passed
        steps.setdefault(a["step"], []).append((float(a["verdict"]["score"]), strict))
    return [{"step": s, "own": sum(o for o, _ in v) / len(v),
             "strict": sum(t for _, t in v) / len(v)} for s, v in sorted(steps.items())]


def hacked_examples(run: Path, own: Scorer, limit: int = 4) -> list[dict[str, Any]]:
    """The last evaluation's answers the run's own reward rates highest among those the
    strict verifier fails, with the strict reason."""
    last = max((run / "evals").glob("step-*.jsonl"))
    failed = [a for a in lines(last) if not a["passed"]]
    if not failed:
        return []
    scores = own([a["completion"] for a in failed], [a["prompt"] for a in failed],
                 [a["reference"] for a in failed])
    ranked = sorted(zip(scores, failed), key=lambda pair: -pair[0])[:limit]
    return [{"prompt": a["prompt"], "reference": a["reference"],
             "completion": a["completion"], "own_reward": round(score, 3),
             "strict_reason": a["reason"]} for score, a in ranked]


def draw(curves: dict[str, dict[str, Any]], path: Path) -> None:
    """One picture, a panel per run: own reward and strict pass rate on the training
    attempts (lines), and on the held-out answers (markers)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(5.2 * len(curves), 4.2), sharey=True,
                             squeeze=False)
    axes = axes[0]
    for ax, (name, c) in zip(axes, curves.items()):
        train, held = c["training"], c["held_out"]
        steps = [r["step"] for r in train]
        ax.plot(steps, smooth([r["own"] for r in train]), color="tab:orange",
                label="own reward (training attempts)")
        ax.plot(steps, smooth([r["strict"] for r in train]), color="tab:blue",
                label="strict verifier (same attempts)")
        hs = [r["step"] for r in held]
        ax.plot(hs, [r["own"] for r in held], "o--", color="tab:orange", mfc="white",
                label="own reward (held-out)")
        ax.plot(hs, [r["strict"] for r in held], "s-", color="tab:blue",
                label="strict accuracy (held-out)")
        same = " (own reward = strict: one line)" if name == "strict" else ""
        ax.set_title(f"{name}: {c['reward']}{same}", fontsize=10)
        ax.set_xlabel("RL step")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean reward / pass rate")
    axes[0].legend(loc="upper left", fontsize=8)
    fig.suptitle("The same start, three rewards: what each run was paid vs what the strict "
                 "verifier accepts (SmolLM2-135M, arithmetic)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def smooth(values: list[float], window: int = 5) -> list[float]:
    """Trailing mean over `window` steps (a training batch is 64 attempts: noisy)."""
    out = []
    for i in range(len(values)):
        chunk = values[max(0, i - window + 1):i + 1]
        out.append(sum(chunk) / len(chunk))
    return out
