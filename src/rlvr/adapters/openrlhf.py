"""OpenRLHF adapter: rlvr verifiers as OpenRLHF's custom reward function.

OpenRLHF (`--remote_rm_url path/to/reward_func.py --label_key answer`) loads a file and
calls its `reward_func(queries, prompts, labels)`: `queries` are prompt + response
texts, `prompts` the prompts, `labels` the dataset's label column. It takes a tensor of
rewards, or {"rewards", "scores", "extra_logs"}. A file of one line serves:

    from rlvr.adapters.openrlhf import reward_func          # math, or $RLVR_VERIFIER

or, for another verifier or options, `reward_func = make_reward_func("code")`.

A label that is a JSON object {"verifier": ..., "reference": ..., "options": ...}
picks its own verifier, so one dataset can mix tasks. A label is data: it names a
built-in or a plugin you listed (`make_reward_func(..., plugins=["my_pkg:V"])`, then
known by that string), never other code, and sets only the verifier's grading options
(rlvr.verifiers.untrusted); anything else raises ValueError naming the item and field. Grading runs on the adapters'
shared workers (this rank's share of the cores, or `rlvr serve` servers with
$RLVR_SERVE_URLS). Invalid references raise ValueError naming the item.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Sequence

from rlvr.adapters.common import SHARED, check_options, normalise_reference, use_plugins
from rlvr.verifiers.pool import Case
from rlvr.verifiers.untrusted import OperatorPolicy


def _response(query: str, prompt: str, index: int) -> str:
    """The response part of `query` (= prompt + response). Decoding may change the
    prompt's surroundings (special tokens), so the prompt is searched for, not assumed
    to be a prefix."""
    at = query.rfind(prompt) if prompt else -1
    if at < 0:
        raise ValueError(f"rlvr reward_func: item {index}: the query does not contain its "
                         "prompt, so the response cannot be told apart")
    return query[at + len(prompt):]


def _label(label: Any, verifier: str, options: dict[str, Any]) -> tuple[Any, Any, Any, bool]:
    """(verifier, reference, options, chosen by the label itself); what a label chose
    is checked by the caller (OperatorPolicy), shapes included."""
    if isinstance(label, str) and label.lstrip().startswith("{"):
        try:
            parsed = json.loads(label)
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict) and "verifier" in parsed and "reference" in parsed:
            label = parsed
    if isinstance(label, dict) and "verifier" in label and "reference" in label:
        return label["verifier"], label["reference"], label.get("options") or {}, True
    return verifier, label, options, False


def make_reward_func(verifier: str = "math", options: dict[str, Any] | None = None,
                     timeout_s: float | None = None,
                     plugins: Sequence[str] | None = None) -> Callable[..., Any]:
    """An OpenRLHF `reward_func(queries, prompts, labels)` grading with `verifier`;
    `plugins`: your own "module:Class" verifiers, which labels may then name."""
    options = dict(options or {})
    use_plugins(plugins)
    check_options(verifier, options)
    # what a label may choose: your options for `verifier` fill in what it leaves out
    policy = OperatorPolicy({verifier: options}, timeout_s)

    def reward_func(queries: Sequence[str], prompts: Sequence[str],
                    labels: Sequence[Any]) -> dict[str, Any]:
        cases = []
        for index, (query, prompt, label) in enumerate(zip(queries, prompts, labels,
                                                           strict=True)):
            name, reference, chosen, from_label = _label(label, verifier, options)
            case = Case(name, _response(query, prompt, index),
                        normalise_reference(name, reference) if isinstance(name, str)
                        else reference, chosen, timeout_s, prompt=prompt)
            if from_label:  # the label is data: refused (ValueError) when it names code
                case = policy.admit(case, f"rlvr reward_func: item {index}: label")
            cases.append(case)
        verdicts = SHARED.verify(cases)
        for index, verdict in enumerate(verdicts):
            if verdict.is_invalid:
                raise ValueError(f"rlvr reward_func: item {index}: invalid label: "
                                 f"{verdict.details.get('error')}")
        import torch

        scores = torch.tensor([v.score for v in verdicts], dtype=torch.float32)
        passed = torch.tensor([float(v.passed) for v in verdicts], dtype=torch.float32)
        return {"rewards": scores, "scores": scores, "extra_logs": {"passed": passed}}

    return reward_func


_DEFAULT: list[Callable[..., Any]] = []


def reward_func(queries: Sequence[str], prompts: Sequence[str],
                labels: Sequence[Any]) -> dict[str, Any]:
    """OpenRLHF's entry point, grading with $RLVR_VERIFIER (default math); built on the
    first call, so importing this module imports no verifier."""
    if not _DEFAULT:
        _DEFAULT.append(make_reward_func(os.environ.get("RLVR_VERIFIER", "math")))
    return _DEFAULT[0](queries, prompts, labels)
