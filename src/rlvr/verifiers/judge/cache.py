"""Judgements by key: a bounded in-memory LRU, optionally backed by a folder of JSON
files (shared by the pool's worker processes and kept across runs).

Only good verdicts are stored: a failed or unparseable call is asked again next time.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Any


def cache_key(parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


class VerdictCache:
    def __init__(self, max_items: int = 4096, folder: str | Path | None = None) -> None:
        self.max_items = max_items
        self.folder = Path(folder).expanduser() if folder else None
        self._items: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def get(self, key: str) -> dict[str, Any] | None:
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        found = self._read(key)
        if found is not None:
            self._remember(key, found)
        return found

    def put(self, key: str, value: dict[str, Any]) -> None:
        self._remember(key, value)
        if self.folder is not None:
            self._write(key, value)

    def __len__(self) -> int:
        return len(self._items)

    def _remember(self, key: str, value: dict[str, Any]) -> None:
        if self.max_items <= 0:
            return
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.max_items:
            self._items.popitem(last=False)

    def _path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / key[:2] / f"{key}.json"

    def _read(self, key: str) -> dict[str, Any] | None:
        if self.folder is None:
            return None
        try:
            value = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):  # absent, or a torn file from a killed writer
            return None
        return value if isinstance(value, dict) else None

    def _write(self, key: str, value: dict[str, Any]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # write-then-rename: a reader in another worker never sees half a file
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(value, f)
        os.replace(tmp, path)
