"""IFEval prompt- and instruction-level accuracy (strict and loose) through the real
ifeval verifier, on fixed responses whose per-instruction results are worked out by
hand below."""

from __future__ import annotations

import pytest

from rlvr.data.records import TaskRecord
from rlvr.evaluation.runner import EvalSettings, evaluate
from rlvr.verifiers.pool import VerifierPool

from eval_helpers import ScriptedEngine

END = "Is there anything else I can help with?"
SENTENCE = "the quick brown fox jumps over the lazy dog and then it runs back home to sleep"


def _record(key, ids, kwargs):
    return TaskRecord(f"prompt {key}", {"prompt": f"prompt {key}", "instruction_id_list": ids,
                                        "kwargs": kwargs}, "ifeval", f"ifeval/{key}")


RECORDS = [
    _record(1, ["punctuation:no_comma", "change_case:english_lowercase"], [{}, {}]),
    _record(2, ["punctuation:no_comma", "change_case:english_lowercase"], [{}, {}]),
    _record(3, ["startend:end_checker"], [{"end_phrase": END}]),
    _record(4, ["detectable_format:title", "punctuation:no_comma"], [{}, {}]),
]
RESPONSES = {
    # strict [no comma: yes, lowercase: yes]; loose the same.
    "prompt 1": f"{SENTENCE}.",
    # strict [comma present: no, "Sure" capitalised: no]. Loose: dropping the last line
    # leaves "Sure:" (no comma: yes); dropping the first leaves lowercase text (yes).
    "prompt 2": f"Sure:\n{SENTENCE}, in the warm barn.",
    # strict: the text ends with "bye", not the phrase (no); loose: without the last
    # line it ends with the phrase (yes).
    "prompt 3": f"Done. {END}\nbye",
    # no <<title>> in any variant, and the comma stays in every non-empty one: [no, no].
    "prompt 4": "no title, sorry",
}


def test_ifeval_levels_strict_and_loose():
    # preloaded so the first checks do not pay the ifeval imports inside their time limit
    with VerifierPool(workers=2, preload=["ifeval"]).start() as pool:
        result = evaluate(ScriptedEngine(RESPONSES), RECORDS, lambda r: r.prompt,
                          EvalSettings(greedy=True), pool=pool)
    m = result.metrics
    # strict: [T,T] [F,F] [F] [F,F] -> 1 of 4 prompts; 2 of 7 instructions.
    assert m["greedy/ifeval_prompt_strict"] == pytest.approx(1 / 4)
    assert m["greedy/ifeval_instruction_strict"] == pytest.approx(2 / 7)
    # loose: [T,T] [T,T] [T] [F,F] -> 3 of 4 prompts; 5 of 7 instructions.
    assert m["greedy/ifeval_prompt_loose"] == pytest.approx(3 / 4)
    assert m["greedy/ifeval_instruction_loose"] == pytest.approx(5 / 7)
    # greedy/accuracy is the prompt-level strict number, from the main verdict.
    assert m["greedy/accuracy"] == pytest.approx(1 / 4)
    # per instruction group: punctuation strict 1 of 3 (record 1), loose 2 of 3 (1, 2);
    # change_case 1 of 2 / 2 of 2; startend 0 / 1 of 1; detectable_format 0 / 0 of 1.
    groups = result.breakdown["instruction"]
    assert groups["punctuation"] == {"count": 3.0, "strict": 1 / 3, "loose": 2 / 3}
    assert groups["change_case"] == {"count": 2.0, "strict": 0.5, "loose": 1.0}
    assert groups["startend"] == {"count": 1.0, "strict": 0.0, "loose": 1.0}
    assert groups["detectable_format"] == {"count": 1.0, "strict": 0.0, "loose": 0.0}
    attempt = result.attempts[1].to_dict()
    assert attempt["secondary"]["loose"]["passed"] is True
    assert attempt["verdict"]["details"]["instructions"][0]["followed"] is False


def test_a_check_that_timed_out_counts_as_no_instruction_followed():
    from rlvr.evaluation.summary import Attempt, summarize
    from rlvr.verifiers.base import Verdict

    done = Verdict(0.5, False, "not_followed", {"instructions": [
        {"id": "a", "followed": True}, {"id": "b", "followed": False}]})
    attempts = [Attempt("x", "greedy", 0, "", "eos", 1, done, instructions=2),
                Attempt("y", "greedy", 0, "", "eos", 1, Verdict.timeout(5.0), instructions=3)]
    m = summarize(attempts, [], ks=(1,))
    assert m["greedy/ifeval_instruction_strict"] == pytest.approx(1 / 5)  # 1 of 2 + 3
    assert m["greedy/ifeval_prompt_strict"] == 0.0
