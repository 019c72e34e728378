"""Print an evaluation as a table and write its JSON results file."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rlvr.evaluation.runner import EvalResult
from rlvr.textsafe import json_line

# Columns of the per-category tables: these, then every pass@k and maj@k present.
_CATEGORY_COLUMNS = ("greedy/accuracy", "strict", "loose")


def _fmt(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.4f}"


def _ordered(metrics: dict[str, float]) -> list[str]:
    def rank(name: str) -> tuple[int, int, str]:
        if name.startswith(("pass@", "maj@")):
            return (1 if name.startswith("pass@") else 2, int(name.split("@")[1]), name)
        return (0 if name.startswith("greedy/") else 3 if name == "count" else 0, 0, name)
    return sorted(metrics, key=rank)


def format_table(result: EvalResult) -> str:
    """The headline metrics, then one table per breakdown key."""
    label = result.info.get("dataset", "eval")
    lines = [f"{label}: {int(result.metrics.get('count', 0))} problems"]
    names = [m for m in _ordered(result.metrics) if m != "count"]
    width = max((len(m) for m in names), default=10)
    lines += [f"  {name:<{width}}  {_fmt(result.metrics[name])}" for name in names]
    for key, groups in result.breakdown.items():
        present = {c for g in groups.values() for c in g}
        columns = [c for c in _CATEGORY_COLUMNS if c in present] + [
            c for c in _ordered({c: 0.0 for c in present}) if c.startswith(("pass@", "maj@"))]
        first = max(len(key), *(len(v) for v in groups))
        lines.append("")
        lines.append(f"  {key:<{first}}  {'n':>5}  " + "  ".join(f"{c:>15}" for c in columns))
        for value, metrics in groups.items():
            cells = "  ".join(f"{_fmt(metrics.get(c, float('nan'))):>15}" for c in columns)
            lines.append(f"  {value:<{first}}  {int(metrics['count']):>5}  {cells}")
    return "\n".join(lines)


def _clean(value: Any) -> Any:
    """NaN is not JSON: write null instead."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def write_results(result: EvalResult, path: str | Path) -> Path:
    """The JSON results file: config, metrics, breakdown, records, every attempt."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json_line(_clean(result.to_dict()), indent=1, default=str) + "\n",
                      encoding="utf-8")
    return target
