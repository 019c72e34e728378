"""The page itself: one HTML template, our script and style, and plotly.js (the charting
library, from the `plotly` Python package: nothing is fetched from the network).

Served, the page loads its script and data from the server; exported, everything is
inlined into one file (`rlvr view RUN --export report.html`), data included, and the
same script reads the data from the page instead of the server.
"""

from __future__ import annotations

import math
import re
from importlib import resources
from pathlib import Path
from typing import Any

from rlvr.errors import UserError
from rlvr.textsafe import json_line

STATIC = ("app.js", "style.css")


class ViewDependencyError(UserError, RuntimeError):
    """A package the page needs is not installed; the message says how to get it."""


def static_text(name: str) -> str:
    return resources.files("rlvr.view").joinpath("static", name).read_text(encoding="utf-8")


def plotly_js_path() -> Path:
    """plotly.min.js as the plotly package ships it (no CDN: this machine may be offline)."""
    try:
        import plotly
    except ImportError:
        raise ViewDependencyError("rlvr view draws its curves with plotly.js from the "
                                  "`plotly` package: pip install 'rlvr[view]'") from None
    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise ViewDependencyError(f"{path}: missing from the installed plotly package "
                                  "(reinstall it: pip install --force-reinstall plotly)")
    return path


def served_page(title: str, refresh_s: float) -> str:
    """The HTML the server returns at /: scripts by URL, data from /api."""
    # plotly.js (4.8 MB, ~1.5 s to compile on a slow CPU) is loaded by app.js once the
    # attempts are painted (loadPlotly), so the page shows the run before the curves.
    head = ('<link rel="stylesheet" href="static/style.css">'  # fetched now, run later:
            '<link rel="preload" href="static/plotly.min.js" as="script">')
    boot = {"mode": "served", "refresh_s": refresh_s, "plotly": "static/plotly.min.js"}
    return _fill(title, head, boot, '<script src="static/app.js"></script>')


def exported_page(title: str, data: dict[str, Any]) -> str:
    """One self-contained file: style, plotly.js, the script and the runs' data inline."""
    # plotly.js as text that does not run on load: app.js runs it once the attempts are
    # painted, as the served page loads it then.
    head = (f"<style>{static_text('style.css')}</style>"
            '<script id="plotly-source" type="text/plain">'
            f"{_script_safe(plotly_js_path().read_text(encoding='utf-8'))}</script>")
    boot = {"mode": "export", "data": data}
    return _fill(title, head, boot, f"<script>{_script_safe(static_text('app.js'))}</script>")


def _fill(title: str, head: str, boot: dict[str, Any], script: str) -> str:
    """The template with its placeholders filled in one pass: text put in (a completion
    in the boot data holding "{{SCRIPT}}", say) is never searched for placeholders."""
    values = {"TITLE": _escape(title), "HEAD": head, "BOOT": json_for_script(boot),
              "SCRIPT": script}
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], static_text("page.html"))


_PLACEHOLDER = re.compile(r"\{\{(TITLE|HEAD|BOOT|SCRIPT)\}\}")


def json_for_script(value: Any) -> str:
    """JSON that can sit inside <script>: every "<" escaped, so no "</script>" or "<!--"
    in a completion can end the element (completions are model output: anything)."""
    # json_line: model text read back from a run may hold a lone surrogate, which
    # plain json.dumps(ensure_ascii=False) passes on to a UTF-8 encode that raises
    return json_line(finite(value), allow_nan=False).replace("<", "\\u003c")


def finite(value: Any) -> Any:
    """`value` with NaN and infinities as None: JSON has no NaN (metrics may hold one,
    e.g. eval/accuracy of a step without an evaluation)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def _script_safe(code: str) -> str:
    return code.replace("</script", "<\\/script")


def _escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))
