"""TRL's GRPOTrainer side of bench_learning.py, in its own process (so its peak memory is
its own), on the task and settings of an rlvr training config.

    python -m benchmarks.headline.bench_learning_trl_side \
        --config configs/learning_arithmetic.yaml --out DIR [key=value ...]

From the rlvr config: the same model directory, the same training problems and held-out
problems (rlvr's data loading), the same prompt text (rlvr's own renderer, handed to
TRL as plain text, so the chat template and instruction are identical), group size,
prompts per step, completion limit, sampling, optimizer and schedule, clip range and
loss aggregation (`grpo_settings`), and the same verifier through rlvr's TRL adapter
with the problem text passed as the prompt (what rlvr's trainer passes). TRL runs with
its fastest CPU settings: float32, no activation checkpointing, no bf16.

Evaluation is rlvr's trainer's own (`held_out_eval`'s numbers), on an rlvr engine
wrapped around the live TRL model, so both sides are graded by the same code and
decoding: at step 0, each time the training clock (evaluation pauses excluded) passes
a multiple of `eval.every_s`, and at the end; training stops when the clock reaches
`max_seconds` (bench_learning_trl_clock.py). Writes OUT/evals.jsonl, OUT/evals/ and
OUT/metrics.jsonl in the rlvr run-dir formats (rlvr.runs.curves draws them); the last
stdout line is a JSON summary with the peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import time
from pathlib import Path
from typing import Any

# rlvr's loss aggregation -> TRL's loss_type; rlvr's advantage -> TRL's scale_rewards
LOSS_TYPES = {"token_mean": "dapo", "sequence_mean": "grpo", "constant": "dr_grpo"}
REWARD_SCALING = {"grpo": "group", "dr_grpo": "none"}
# rlvr's schedule -> TRL's (Hugging Face's) lr_scheduler_type
SCHEDULES = {"constant": "constant_with_warmup", "cosine": "cosine_with_min_lr",
             "linear": "linear"}


def grpo_settings(cfg: Any, out_dir: str) -> dict[str, Any]:
    """GRPOConfig keyword arguments for rlvr config `cfg`. What TRL cannot express
    raises ValueError rather than running a different algorithm."""
    s, o = cfg.sampling, cfg.optim
    if o.schedule == "linear" and o.min_lr_ratio > 0:
        raise ValueError("optim.schedule=linear decays to min_lr_ratio; TRL's to 0")
    return {
        "output_dir": out_dir, "seed": cfg.seed, "max_steps": cfg.steps,
        # one generation batch = one optimizer step: prompts x group completions
        "per_device_train_batch_size": s.prompts_per_step * s.group_size,
        "num_generations": s.group_size, "gradient_accumulation_steps": 1,
        "max_completion_length": s.max_new_tokens, "temperature": s.temperature,
        "top_p": s.top_p, "top_k": s.top_k,
        "learning_rate": o.lr, "warmup_steps": o.warmup_steps, "weight_decay": o.weight_decay,
        "adam_beta1": o.betas[0], "adam_beta2": o.betas[1], "max_grad_norm": o.grad_clip,
        "lr_scheduler_type": SCHEDULES[o.schedule],
        **({"lr_scheduler_kwargs": {"min_lr_rate": o.min_lr_ratio}}
           if o.schedule == "cosine" else {}),
        **_algorithm_settings(cfg),
        # TRL's fastest CPU settings (GRPOConfig defaults to checkpointing and bf16)
        "use_cpu": True, "bf16": False, "gradient_checkpointing": False,
        "logging_steps": 1, "report_to": [], "save_strategy": "no",
        "dataloader_num_workers": 0, "disable_tqdm": True,
    }


def _algorithm_settings(cfg: Any) -> dict[str, Any]:
    from rlvr.training.algorithm import build_algorithm

    a = cfg.algorithm
    algorithm = build_algorithm(a, cfg.sampling.max_new_tokens)
    loss = algorithm.policy_loss
    aggregation = algorithm.aggregate.name
    unsupported = {
        "algorithm.policy_loss": loss.name != "ppo_clip" or loss.dual_clip is not None,
        "algorithm.advantage": a.advantage.name not in REWARD_SCALING,
        "algorithm.aggregation": aggregation not in LOSS_TYPES or (
            aggregation == "constant" and "max_length" in a.aggregation.options),
        "algorithm.minibatches": a.minibatches != 1,
        "algorithm.dynamic_sampling": a.dynamic_sampling,
        "algorithm.kl_estimator": a.kl_beta > 0 and (a.kl_estimator != "k3" or a.kl_in != "loss"),
        "reward.overlong": cfg.reward.overlong == "soft",
    }
    named = [name for name, bad in unsupported.items() if bad]
    if named:
        raise ValueError(f"no TRL GRPOConfig equivalent for {', '.join(named)}")
    return {"beta": a.kl_beta, "epsilon": loss.eps_low, "epsilon_high": loss.eps_high,
            "num_iterations": a.epochs, "loss_type": LOSS_TYPES[aggregation],
            "scale_rewards": REWARD_SCALING[a.advantage.name],
            "entropy_coef": a.entropy_coef,
            "mask_truncated_completions": cfg.reward.overlong == "mask"}


class ProblemPromptReward:
    """rlvr's TRL reward function, handed the problem text (the dataset's "problem"
    column) as the prompt instead of TRL's rendered chat text: the math verifier's
    echo check reads the prompt, and rlvr's trainer passes the problem text."""

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter
        self.__name__ = adapter.__name__

    def __call__(self, prompts=None, completions=None, **columns):  # noqa: ANN001, ANN204
        return self.adapter(prompts=columns["problem"], completions=completions, **columns)


def training_rows(records: list, render: Any) -> list[dict[str, str]]:
    return [{"prompt": render(r), "problem": r.prompt, "reference": str(r.reference)}
            for r in records]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, help="rlvr training config (YAML)")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("overrides", nargs="*", metavar="key.sub=value")
    args = parser.parse_args()
    from rlvr.config import load_config
    from rlvr.training.config import TrainConfig

    cfg = load_config(TrainConfig, args.config, list(args.overrides))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("evals.jsonl", "metrics.jsonl"):  # a rerun into the same directory
        (out / name).unlink(missing_ok=True)
    shutil.rmtree(out / "evals", ignore_errors=True)
    summary = run(cfg, out)
    summary["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(summary))


def run(cfg: Any, out: Path) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from rlvr.adapters.trl import reward_func
    from rlvr.models import resolve_model
    from rlvr.training.setup import every_core, load_data, prompt_renderer
    from rlvr.verifiers.pool import VerifierPool
    from benchmarks.headline.bench_learning_trl_clock import EvalClock

    started = time.perf_counter()  # wall second 0, as rlvr's train() counts it
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.model.threads if cfg.model.threads > 0 else every_core())
    model_dir = resolve_model(cfg.model.path)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    renderer = prompt_renderer(cfg.prompt, tokenizer)
    train_records, held_out = load_data(cfg.data, cfg.seed)
    rows = training_rows(train_records, renderer.render)
    check_tokenization(tokenizer, rows[0]["prompt"])
    verifier = cfg.reward.verifier or cfg.data.default_verifier
    options = dict(cfg.reward.options) if cfg.reward.verifier else {}
    settings = grpo_settings(cfg, str(out))
    with VerifierPool(workers=cfg.reward.workers or None, timeout_s=cfg.reward.timeout_s,
                      preload=[verifier]) as pool:
        reward = ProblemPromptReward(reward_func(verifier, options=options, pool=pool))
        clock = EvalClock(cfg, out, tokenizer, renderer, pool, held_out, started)
        trainer = GRPOTrainer(model=model, reward_funcs=reward, args=GRPOConfig(**settings),
                              train_dataset=Dataset.from_list(rows),
                              processing_class=tokenizer, callbacks=[clock])
        trainer.train()
    return {"side": "trl", "model": str(model_dir), "steps": clock.last_step,
            "train_seconds": clock.clock.seconds(), "step_seconds": clock.step_seconds,
            "wall_seconds": time.perf_counter() - started,
            "settings": {k: v for k, v in settings.items() if k != "output_dir"}}


def check_tokenization(tokenizer: Any, prompt: str) -> None:
    """TRL tokenizes a plain prompt with the tokenizer's special tokens added; rlvr's
    engines without (the rendered text already holds them). Same ids, or stop."""
    trl_ids = tokenizer(text=[prompt])["input_ids"][0]
    rlvr_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    if list(trl_ids) != list(rlvr_ids):
        sys.exit("TRL would tokenize the rendered prompt differently from rlvr (the "
                 "tokenizer adds special tokens): the sides would not see the same prompt")


if __name__ == "__main__":
    main()
