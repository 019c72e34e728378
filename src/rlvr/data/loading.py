"""Load task records from local files, mapping their fields to prompt/reference/verifier.

Formats: JSON Lines (.jsonl), a JSON list (.json), Parquet (.parquet, needs pyarrow or
pandas), or a directory written by `datasets.Dataset.save_to_disk` (needs `datasets`).
Every row is checked when loaded — prompt present and non-empty, verifier known,
reference accepted by the verifier's `check_reference` — so a bad row stops the run
before training starts, with the file and line (or row index) named.

A data file is not configuration: a row's verifier field names a built-in, a registered
verifier or a plugin the run's config lists (`reward.plugins`), never code. A row
naming any other import path is refused (DataError naming the file, line and field),
even with `check=False`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from rlvr.data.records import TaskRecord
from rlvr.errors import UserError
from rlvr.runs.jsonl import JsonlError, read_jsonl
from rlvr.verifiers.base import InvalidReference
from rlvr.verifiers.registry import get_verifier, spec_for
from rlvr.verifiers.untrusted import Refused, check_name


class DataError(UserError, ValueError):
    """A dataset row or file is unusable; the message names the file and line."""


def _after_hashes(text: Any) -> Any:
    """GSM8K solutions end with '#### <answer>'; the reference is that answer."""
    if not isinstance(text, str) or "####" not in text:
        raise ValueError("no '####' final-answer line")
    return text.rsplit("####", 1)[1].strip().replace(",", "")


def _integer_string(value: Any) -> Any:
    """AMC-style float answers (27.0) as exact integer strings."""
    number = float(value)
    if not number.is_integer():
        raise ValueError(f"{value!r} is not integer-valued")
    return str(int(number))


# Named reference transforms a field mapping may apply (config-friendly: strings).
REFERENCE_TRANSFORMS: dict[str, Callable[[Any], Any]] = {
    "gsm8k": _after_hashes,
    "integer": _integer_string,
    "str": lambda value: str(value),
}


def _doc(help_text: str, **kwargs: Any) -> Any:
    return field(metadata={"help": help_text}, **kwargs)  # shown by `rlvr train --describe`


@dataclass(frozen=True)
class FieldMapping:
    """Which source fields become the record's fields (dotted paths reach into dicts).

    prompt/reference/verifier/id: source field names ("." = the whole row); `verifier`
    may be absent from the data when `default_verifier` is given; `id` defaults to "<file stem>:<line>".
    prompt_template: optional str.format template over the row, e.g. "Q: {question}\\nA:"
    (used instead of `prompt` when set).
    reference_transform: a name from REFERENCE_TRANSFORMS applied to the reference.
    metadata: source fields copied into record.metadata.
    """

    prompt: str = _doc("source field holding the prompt (text or chat messages)",
                       default="prompt")
    reference: str = _doc("source field holding what the verifier checks against",
                          default="reference")
    verifier: str = _doc("source field naming each row's verifier (may be absent when a "
                         "default verifier is given)", default="verifier")
    id: str | None = _doc("source field holding a stable id (null: <file stem>:<line>)",
                          default=None)
    prompt_template: str | None = _doc("str.format template over the row, e.g. "
                                       "'Q: {question}\\nA:', used instead of `prompt` "
                                       "(null: off)", default=None)
    reference_transform: str | None = _doc("applied to the reference: "
                                           + " | ".join(REFERENCE_TRANSFORMS)
                                           + " (null: none)", default=None)
    metadata: tuple[str, ...] = _doc("source fields copied into record.metadata",
                                     default_factory=tuple)


def load_records(path: str | Path, mapping: FieldMapping | None = None,
                 default_verifier: str | None = None, limit: int | None = None,
                 check: bool = True) -> list[TaskRecord]:
    """Task records from `path`; raises DataError naming the file and line of a bad row."""
    mapping = mapping or FieldMapping()
    if mapping.reference_transform and mapping.reference_transform not in REFERENCE_TRANSFORMS:
        raise DataError(f"unknown reference_transform {mapping.reference_transform!r} "
                        f"(known: {', '.join(REFERENCE_TRANSFORMS)})")
    path = Path(path)
    records = []
    for where, position, row in _rows(path):
        if limit is not None and len(records) >= limit:
            break
        records.append(_to_record(row, where, f"{path.stem}:{position}", mapping,
                                  default_verifier, check))
    if not records:
        raise DataError(f"{path}: no records")
    return records


def read_rows(path: str | Path) -> Iterator[tuple[str, int, Any]]:
    """(where, position, row) for every row of a JSONL/JSON/Parquet file or datasets dir,
    `where` naming the file and line (or row) for error messages; DataError on a
    missing file, an unknown format or malformed JSON. For row shapes other than task
    records (rlvr rm-train's preference pairs)."""
    return _rows(Path(path))


def _rows(path: Path) -> Iterator[tuple[str, int, Any]]:
    if not path.exists():
        raise DataError(f"{path}: no such file or directory")
    if path.is_dir():
        yield from _dataset_dir_rows(path)
    elif path.suffix == ".jsonl":
        try:  # a dataset someone wrote: any malformed line is an error, a last one too
            for number, row in read_jsonl(path, "raise", objects=False):
                yield f"{path}:{number}", number, row
        except JsonlError as exc:
            raise DataError(str(exc)) from None
    elif path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{exc.lineno}: malformed JSON: {exc.msg}") from None
        if not isinstance(data, list):
            raise DataError(f"{path}: expected a JSON list of records")
        for index, row in enumerate(data):
            yield f"{path}[{index}]", index, row
    elif path.suffix == ".parquet":
        yield from _parquet_rows(path)
    else:
        raise DataError(f"{path}: unsupported format (use .jsonl, .json, .parquet or a "
                        "datasets directory)")


def _parquet_rows(path: Path) -> Iterator[tuple[str, int, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow)") from None
    for index, row in enumerate(pq.read_table(path).to_pylist()):
        yield f"{path} row {index}", index, row


def _dataset_dir_rows(path: Path) -> Iterator[tuple[str, int, Any]]:
    try:
        import datasets
    except ImportError:
        raise DataError(f"{path}: a directory is read as a saved `datasets` dataset, which "
                        "needs the datasets package (pip install datasets)") from None
    dataset = datasets.load_from_disk(str(path))
    if isinstance(dataset, datasets.DatasetDict):
        raise DataError(f"{path}: a DatasetDict; point at one split's directory "
                        f"({', '.join(dataset)})")
    for index, row in enumerate(dataset):
        yield f"{path} row {index}", index, row


def _get(row: dict[str, Any], dotted: str, where: str) -> Any:
    if dotted == ".":  # the whole row (e.g. an IFEval or HumanEval row is the reference)
        return row
    value: Any = row
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            raise DataError(f"{where}: missing field {dotted!r} (has: {', '.join(map(str, row))})")
        value = value[part]
    return value


def _to_record(row: Any, where: str, default_id: str, mapping: FieldMapping,
               default_verifier: str | None, check: bool) -> TaskRecord:
    if not isinstance(row, dict):
        raise DataError(f"{where}: expected an object, got {type(row).__name__}")
    prompt = _prompt(row, where, mapping)
    reference = _get(row, mapping.reference, where)
    if mapping.reference_transform:
        try:
            reference = REFERENCE_TRANSFORMS[mapping.reference_transform](reference)
        except (ValueError, TypeError) as exc:
            raise DataError(f"{where}: field {mapping.reference!r}: "
                            f"{mapping.reference_transform} transform failed: {exc}") from None
    if mapping.verifier in row:
        verifier = row[mapping.verifier]
    elif default_verifier:
        verifier = default_verifier
    else:
        raise DataError(f"{where}: missing field {mapping.verifier!r} and no default verifier")
    try:  # always, cheap: a row never names code (rlvr.verifiers.untrusted)
        check_name(verifier, where, mapping.verifier if mapping.verifier in row
                   else "default_verifier")
    except Refused as exc:
        raise DataError(str(exc)) from None
    if check:
        _check_reference(verifier, reference, where, mapping.verifier)
    record_id = str(_get(row, mapping.id, where)) if mapping.id else default_id
    metadata = {name: _get(row, name, where) for name in mapping.metadata}
    return TaskRecord(prompt, reference, verifier, record_id, metadata)


def _prompt(row: dict[str, Any], where: str, mapping: FieldMapping) -> Any:
    if mapping.prompt_template:
        try:
            return mapping.prompt_template.format(**row)
        except (KeyError, IndexError) as exc:
            raise DataError(f"{where}: prompt_template needs field {exc}") from None
    prompt = _get(row, mapping.prompt, where)
    if isinstance(prompt, str) and prompt.strip():
        return prompt
    if isinstance(prompt, list) and prompt and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and
            isinstance(m.get("content"), str) for m in prompt):
        return prompt
    raise DataError(f"{where}: field {mapping.prompt!r} must be non-empty text or a list of "
                    "{'role', 'content'} messages")


def _check_reference(verifier: Any, reference: Any, where: str, field_name: str) -> None:
    try:
        spec_for(verifier)
        get_verifier(verifier).check_reference(reference)
    except KeyError as exc:
        raise DataError(f"{where}: field {field_name!r}: {exc.args[0]}") from None
    except InvalidReference as exc:
        raise DataError(f"{where}: invalid reference for verifier {verifier!r}: {exc}") from None
