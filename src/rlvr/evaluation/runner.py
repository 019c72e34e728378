"""Run an evaluation: generate with a rollout engine, grade with the verifier pool,
summarise. The same code serves `rlvr eval` and the trainer's periodic evaluation.

Generation and grading overlap: while the engine generates batch i+1, one helper
thread hands batch i to the `VerifierPool`, whose worker processes use the other
cores (the pool itself is driven by one thread at a time).
"""

from __future__ import annotations

import json
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Sequence

from rlvr.config import ConfigError
from rlvr.data.records import TaskRecord, prompt_text
from rlvr.evaluation.progress import Progress
from rlvr.evaluation.summary import (ANSWER_KEYS, Attempt, breakdown, ifeval_by_instruction,
                                    summarize)
from rlvr.rollout.base import Completion, RolloutEngine, SamplingParams
from rlvr.verifiers.base import Verdict
from rlvr.verifiers.pool import BatchVerifier, Case, VerifierPool

# A task record -> the exact text the engine continues (e.g. rlvr.data.prompts'
# PromptRenderer.render, the trainer's own renderer).
Renderer = Callable[[TaskRecord], str]


def _doc(help_text: str, **kwargs: Any) -> Any:
    return field(metadata={"help": help_text}, **kwargs)


@dataclass(frozen=True)
class EvalSettings:
    """How to evaluate. Also the trainer's `eval` config section (rlvr.config schema:
    every field documented here; `validate` names the bad field)."""

    greedy: bool = _doc("one temperature-0 answer per record (greedy/accuracy)", default=True)
    n: int = _doc("samples per record at `temperature` for pass@k / maj@k (0: none)",
                  default=0)
    ks: tuple[int, ...] = _doc("the k of pass@k and maj@k; values above n are skipped",
                               default=(1,))
    temperature: float = _doc("sampling temperature of the n samples", default=1.0)
    top_p: float = _doc("nucleus sampling for the n samples (1.0: off)", default=1.0)
    max_new_tokens: int = _doc("generation budget per answer; a cut answer is graded as "
                               "it stands", default=512)
    batch_size: int = _doc("records per engine.generate call (each with n samples)",
                           default=8)
    seed: int = _doc("base seed; sampling batch b uses seed + b, so runs repeat", default=0)
    stop: tuple[str, ...] = _doc("stop strings passed to the engine", default=())
    max_subsets: int = _doc("maj@k averages over every k-subset of the n samples up to "
                            "this many, else over this many drawn at random (seeded by "
                            "the record id)", default=2000)
    answer_keys: tuple[str, ...] = _doc("verdict-details keys holding the extracted answer "
                                        "maj@k votes on, first present wins",
                                        default=ANSWER_KEYS)

    def validate(self) -> None:
        if not self.greedy and self.n < 1:
            raise ConfigError("nothing to evaluate: set greedy true or n >= 1", "n")
        for name in ("n", "batch_size", "max_new_tokens", "max_subsets"):
            if getattr(self, name) < (0 if name == "n" else 1):
                raise ConfigError(f"must be >= {0 if name == 'n' else 1}", name)
        if any(k < 1 for k in self.ks):
            raise ConfigError(f"every k must be >= 1, got {list(self.ks)}", "ks")
        if self.n and self.temperature <= 0:
            raise ConfigError("sampling n answers needs temperature > 0 (greedy covers 0)",
                              "temperature")


@dataclass
class EvalResult:
    """Everything one evaluation produced; `to_dict` is the JSON results file."""

    metrics: dict[str, float]
    breakdown: dict[str, dict[str, dict[str, float]]]
    attempts: list[Attempt]
    records: list[dict[str, Any]]
    settings: EvalSettings
    info: dict[str, Any] = field(default_factory=dict)  # dataset, model, timings

    def to_dict(self) -> dict[str, Any]:
        return {"config": {**asdict(self.settings), **self.info}, "metrics": self.metrics,
                "breakdown": self.breakdown, "records": self.records,
                "attempts": [a.to_dict() for a in self.attempts]}


# Extra checks per verifier, reported beside the main verdict: IFEval's loose accuracy
# needs the ifeval verifier in loose mode on the same response.
SECONDARY_CHECKS: dict[str, dict[str, dict[str, Any]]] = {"ifeval": {"loose": {"loose": True}}}


def _assign(slots: list[tuple[Attempt, str | None]], verdicts: list[Verdict]) -> None:
    """Verdict i belongs to slot i's attempt: its main verdict (label None) or a
    secondary one."""
    for (attempt, label), verdict in zip(slots, verdicts):
        if label is None:
            attempt.verdict = verdict
        else:
            attempt.secondary[label] = verdict


class _Grader:
    """Grades batches on one background thread so generation is not kept waiting.
    Each submitted job is (attempts, cases, slots): verdict i goes to slot i's attempt,
    as its main verdict (label None) or as a secondary one."""

    def __init__(self, pool: BatchVerifier) -> None:
        self.pool = pool
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rlvr-eval-grade")
        self.pending: list[tuple[list[Attempt], list[tuple[Attempt, str | None]],
                                 Future[list[Verdict]]]] = []

    def submit(self, attempts: list[Attempt], cases: list[Case],
               slots: list[tuple[Attempt, str | None]]) -> None:
        self.pending.append((attempts, slots, self.executor.submit(self.pool.verify, cases)))

    def drain(self, progress: Progress) -> None:
        for attempts, slots, future in self.pending:
            _assign(slots, future.result())
            progress.graded(attempts)
        self.pending = []

    def close(self) -> None:
        self.executor.shutdown(wait=True)


def _instruction_count(record: TaskRecord) -> int:
    ids = record.reference.get("instruction_id_list") if isinstance(record.reference, dict) \
        else None
    return len(ids) if record.verifier == "ifeval" and isinstance(ids, list) else 0


def _attempts(batch: Sequence[TaskRecord], outputs: list[list[Completion]], mode: str,
              ) -> tuple[list[Attempt], list[Case], list[tuple[Attempt, str | None]]]:
    attempts, cases, slots = [], [], []
    for record, completions in zip(batch, outputs):
        for index, completion in enumerate(completions):
            attempt = Attempt(record.id, mode, index, completion.text, completion.finish_reason,
                              len(completion.token_ids), Verdict.error("not graded"),
                              instructions=_instruction_count(record))
            attempts.append(attempt)
            text = completion.text
            prompt = prompt_text(record)
            cases.append(Case(record.verifier, text, record.reference, dict(record.options),
                              prompt=prompt))
            slots.append((attempt, None))
            for label, options in SECONDARY_CHECKS.get(record.verifier, {}).items():
                cases.append(Case(record.verifier, text, record.reference,
                                  {**record.options, **options}, prompt=prompt))
                slots.append((attempt, label))
    return attempts, cases, slots


def _params(settings: EvalSettings, mode: str, batch_index: int) -> SamplingParams:
    if mode == "greedy":
        return SamplingParams(max_new_tokens=settings.max_new_tokens, temperature=0.0,
                              stop=settings.stop, seed=settings.seed)
    return SamplingParams(max_new_tokens=settings.max_new_tokens,
                          temperature=settings.temperature, top_p=settings.top_p,
                          stop=settings.stop, seed=settings.seed + batch_index)


def _run_pass(engine: RolloutEngine, records: Sequence[TaskRecord], prompts: list[str],
              settings: EvalSettings, mode: str, grader: _Grader,
              progress: Progress) -> list[Attempt]:
    per_record = 1 if mode == "greedy" else settings.n
    out: list[Attempt] = []
    for b, start in enumerate(range(0, len(records), settings.batch_size)):
        batch = records[start:start + settings.batch_size]
        outputs = engine.generate(prompts[start:start + len(batch)], per_record,
                                  _params(settings, mode, b))
        if len(outputs) != len(batch) or any(len(o) != per_record for o in outputs):
            raise RuntimeError(f"rollout engine returned {[len(o) for o in outputs]} "
                               f"completions for {len(batch)} prompts x {per_record}")
        attempts, cases, slots = _attempts(batch, outputs, mode)
        grader.drain(progress)  # the previous batch, graded while this one generated
        grader.submit(attempts, cases, slots)
        progress.generated(mode, len(batch))
        out.extend(attempts)
    grader.drain(progress)
    return out


def evaluate(engine: RolloutEngine, records: Sequence[TaskRecord], render: Renderer,
             settings: EvalSettings, pool: BatchVerifier | None = None,
             categories: Sequence[str] = (), progress: Progress | None = None,
             info: dict[str, Any] | None = None) -> EvalResult:
    """Generate and grade every record; `pool` is reused if given (the trainer's),
    else one is started on every core and closed at the end."""
    if not records:
        raise ValueError("no records to evaluate")
    settings.validate()
    progress = progress or Progress.silent()
    prompts = [render(record) for record in records]
    own_pool = pool is None
    pool = pool or VerifierPool(preload=sorted({r.verifier for r in records}))
    grader = _Grader(pool)
    started = time.monotonic()
    try:
        progress.start(len(records), settings.greedy, settings.n)
        greedy = (_run_pass(engine, records, prompts, settings, "greedy", grader, progress)
                  if settings.greedy else [])
        samples = (_run_pass(engine, records, prompts, settings, "sample", grader, progress)
                   if settings.n else [])
    finally:
        grader.close()
        if own_pool:
            pool.close()
        progress.finish()
    return _result(records, prompts, greedy, samples, settings, categories,
                   {**(info or {}), "seconds": round(time.monotonic() - started, 2)})


def _result(records: Sequence[TaskRecord], prompts: Sequence[str], greedy: list[Attempt],
            samples: list[Attempt], settings: EvalSettings, categories: Sequence[str],
            info: dict[str, Any]) -> EvalResult:
    metrics = summarize(greedy, samples, settings.ks, settings.answer_keys, settings.max_subsets)
    metrics["count"] = float(len(records))
    meta = {r.id: r.metadata for r in records}
    parts = breakdown(greedy, samples, settings.ks, meta, categories, settings.answer_keys)
    by_instruction = ifeval_by_instruction(greedy or samples)
    if by_instruction:
        parts["instruction"] = by_instruction  # type: ignore[assignment]
    rows = [{"id": r.id, "prompt": text, "reference": r.reference, "verifier": r.verifier,
             "metadata": r.metadata} for r, text in zip(records, prompts)]
    return EvalResult(metrics, parts, greedy + samples, rows, settings, info)


def grade_samples(records: Sequence[TaskRecord], completions: dict[str, list[str]],
                  settings: EvalSettings, pool: BatchVerifier | None = None,
                  categories: Sequence[str] = (), info: dict[str, Any] | None = None,
                  ) -> EvalResult:
    """Grade completions generated elsewhere (a human-eval style samples file): record
    id -> its completions, all counted as samples for pass@k / maj@k (records without
    completions are left out; `settings.n`, `greedy` and sampling fields are unused)."""
    chosen = [r for r in records if completions.get(r.id)]
    if not chosen:
        raise ValueError("no completions for any record")
    outputs = [[Completion([], [], [], text, "given") for text in completions[r.id]]
               for r in chosen]
    attempts, cases, slots = _attempts(chosen, outputs, "sample")
    own_pool = pool is None
    pool = pool or VerifierPool(preload=sorted({r.verifier for r in chosen}))
    started = time.monotonic()
    try:
        _assign(slots, pool.verify(cases))
    finally:
        if own_pool:
            pool.close()
    prompts = [r.prompt if isinstance(r.prompt, str) else json.dumps(r.prompt) for r in chosen]
    return _result(chosen, prompts, [], attempts, settings, categories,
                   {**(info or {}), "seconds": round(time.monotonic() - started, 2)})


def evaluate_records(engine: RolloutEngine, records: Sequence[TaskRecord], render: Renderer,
                     settings: EvalSettings, pool: BatchVerifier | None = None,
                     verifier: str = "", options: dict[str, Any] | None = None,
                     progress: Progress | None = None) -> EvalResult:
    """`evaluate` with the trainer's reward.verifier override: a non-empty `verifier`
    grades every record with that verifier and `options` (e.g. a composite's
    components) instead of its own, exactly as the training rewards are graded."""
    if verifier:
        records = [replace(r, verifier=verifier, options=dict(options or {}))
                   for r in records]
    return evaluate(engine, records, render, settings, pool=pool, progress=progress)

