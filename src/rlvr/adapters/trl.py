"""TRL adapter: an rlvr verifier as a `reward_funcs` entry of GRPOTrainer / RLOOTrainer.

TRL calls each reward function as

    f(prompts=[...], completions=[...], completion_ids=[...], trainer_state=...,
      **{column: [value per completion] for every other dataset column})

where a completion is a string, or for conversational datasets a list of messages
([{"role": "assistant", "content": "..."}]); it expects one float per completion, None
meaning "not applicable" (TRL turns it into NaN and ignores it when summing), and logs
the function under its `__name__`.

    from rlvr.adapters.trl import reward_func
    trainer = GRPOTrainer(..., reward_funcs=[reward_func("math"),
                                             reward_func("format", name="fmt")])

The reference comes from a dataset column ("reference" by default). With a fixed
verifier, rows whose "verifier" column names another verifier get None, so one dataset
can mix tasks with one reward function per verifier; with `verifier=None` each row's
"verifier" column picks it. A row whose reference is missing (None) gets None. An
invalid reference raises ValueError naming the row (a data bug must not train as 0),
unless `on_invalid="none"`.

The verifier column is data: it names a built-in or a plugin you listed
(`plugins=["my_pkg.rewards:MyVerifier"]`, then known by that string), never other
code; a row naming another import path raises ValueError naming the row and column.
"""

from __future__ import annotations

from typing import Any, Sequence

from rlvr.adapters.common import (
    SHARED, check_options, completion_text, data_verifier, normalise_reference, prompt_text,
    use_plugins,
)
from rlvr.verifiers.base import Verdict
from rlvr.verifiers.pool import Case, VerifierPool

class RewardFunction:
    """A TRL reward function backed by rlvr verifiers (see the module docstring).

    verifier:          fixed verifier name, or None to read it from `verifier_column`.
    reference_column:  the dataset column holding each row's reference.
    verifier_column:   the dataset column naming each row's verifier (optional when
                       `verifier` is fixed).
    options:           verifier options (e.g. {"loose": True} for ifeval).
    pool:              a VerifierPool to use; default: one shared by this process.
    timeout_s:         per-item limit (default: the verifier's own).
    name:              the name TRL logs (default "rlvr_<verifier>").
    on_invalid:        "raise" (default) or "none" for rows with an invalid reference.
    workers:           worker processes of the shared pool in this process (this rank);
                       default: the rank's share of the cores (cores / LOCAL_WORLD_SIZE).
    plugins:           your own verifiers ("module:Class"), installed here and in the
                       workers; the verifier (or a row) names one by that string.

    When TRL passes `log_extra` and `log_metric` (TRL >= 1.0), each completion's
    verdict reason goes to the completions table as "<name>_reason" and the batch's
    pass rate, timeout and error rates are logged as "<name>/passed", "/timeout",
    "/error".
    """

    def __init__(self, verifier: str | None = None, *, reference_column: str = "reference",
                 verifier_column: str = "verifier", options: dict[str, Any] | None = None,
                 pool: VerifierPool | None = None, timeout_s: float | None = None,
                 name: str | None = None, on_invalid: str = "raise",
                 workers: int | None = None, plugins: Sequence[str] | None = None) -> None:
        use_plugins(plugins)  # before the name is checked: it may be one of them
        if verifier is not None:
            check_options(verifier, dict(options or {}))  # unknown name or bad options: now
        if on_invalid not in ("raise", "none"):
            raise ValueError("on_invalid must be 'raise' or 'none'")
        self.verifier, self.reference_column = verifier, reference_column
        self.verifier_column, self.options = verifier_column, dict(options or {})
        self.pool, self.timeout_s, self.on_invalid = pool, timeout_s, on_invalid
        self.__name__ = name or f"rlvr_{verifier or 'verifier'}"
        self.last_verdicts: list[Verdict | None] = []  # for logging per-component details
        if workers:
            SHARED.configure(workers)

    def _row_verifier(self, columns: dict[str, Any], index: int) -> str | None:
        row_value = columns.get(self.verifier_column)
        row_value = row_value[index] if row_value is not None else None
        if self.verifier is None:
            if not row_value:
                raise ValueError(f"{self.__name__}: row {index} has no '{self.verifier_column}' "
                                 "column value and no fixed verifier was given")
            name = data_verifier(row_value, f"{self.__name__}: row {index}",
                                 self.verifier_column)
            check_options(name, self.options)
            return name
        if row_value and row_value != self.verifier:
            return None  # another reward function's row
        return self.verifier

    def __call__(self, prompts: Sequence[Any] | None = None,
                 completions: Sequence[Any] | None = None, **columns: Any) -> list[float | None]:
        if completions is None:
            raise TypeError(f"{self.__name__}: called without completions")
        log_extra, log_metric = columns.pop("log_extra", None), columns.pop("log_metric", None)
        if self.reference_column not in columns:
            raise ValueError(f"{self.__name__}: the dataset has no '{self.reference_column}' "
                             f"column (columns passed: {sorted(columns)})")
        references = columns[self.reference_column]
        cases, positions = [], []
        for index, completion in enumerate(completions):
            name = self._row_verifier(columns, index)
            if name is None or references[index] is None:
                continue
            prompt = prompt_text(prompts[index]) if prompts is not None else None
            cases.append(Case(name, completion_text(completion),
                              normalise_reference(name, references[index]), self.options,
                              self.timeout_s, prompt=prompt))
            positions.append(index)
        verdicts = self._verify(cases)
        rewards: list[float | None] = [None] * len(completions)
        self.last_verdicts = [None] * len(completions)
        for index, verdict in zip(positions, verdicts):
            if verdict.is_invalid and self.on_invalid == "raise":
                raise ValueError(f"{self.__name__}: row {index}: invalid reference: "
                                 f"{verdict.details.get('error')}")
            self.last_verdicts[index] = verdict
            rewards[index] = None if verdict.is_invalid else float(verdict.score)
        self._log(self.last_verdicts, log_extra, log_metric)
        return rewards

    def _log(self, verdicts: list[Verdict | None], log_extra: Any, log_metric: Any) -> None:
        if callable(log_extra):
            log_extra(f"{self.__name__}_reason", [v.reason if v else "" for v in verdicts])
        graded = [v for v in verdicts if v is not None]
        if callable(log_metric) and graded:
            for key, hit in (("passed", lambda v: v.passed),
                             ("timeout", lambda v: v.reason == "timeout"),
                             ("error", lambda v: v.reason == "error")):
                log_metric(f"{self.__name__}/{key}", sum(map(hit, graded)) / len(graded))

    def _verify(self, cases: list[Case]) -> list[Verdict]:
        if not cases:
            return []
        if self.pool is not None:
            return self.pool.verify(cases)
        return SHARED.verify(cases)  # no lock: other reward functions grade alongside


class AsyncRewardFunction(RewardFunction):
    """The same reward function as a coroutine: TRL runs async reward functions
    together (asyncio.gather), so several verifiers' rewards grade at once; the grading
    runs in a thread and the event loop stays free."""

    async def __call__(self, prompts: Sequence[Any] | None = None,  # type: ignore[override]
                       completions: Sequence[Any] | None = None,
                       **columns: Any) -> list[float | None]:
        import asyncio

        return await asyncio.to_thread(RewardFunction.__call__, self, prompts, completions,
                                       **columns)


def reward_func(verifier: str | None = None, *, asynchronous: bool = False,
                **kwargs: Any) -> RewardFunction:
    """A TRL reward function for `verifier` (keyword arguments: see RewardFunction);
    `asynchronous=True` gives the coroutine form TRL awaits concurrently."""
    kind = AsyncRewardFunction if asynchronous else RewardFunction
    return kind(verifier, **kwargs)
