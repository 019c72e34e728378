"""Untrusted text never breaks a writer: the escape (rlvr.textsafe) is lossless and
injective, and any text a model writes into a verdict comes out of `rlvr verify`, `rlvr
serve`, the training rollout log and the trackers' rows as lines that parse and give
back exactly that text.

hypothesis is not installed here, so the property tests draw from a seeded generator
over the whole code-point range (lone surrogates, C0/C1 controls, astral characters)
mixed with the fragments the escape itself is made of (backslashes, `u`, hex digits).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from cli_helpers import SRC
from rlvr.textsafe import (escape_text, escape_value, json_line, scrub_text, unescape_text,
                           unescape_value)
from rlvr.verifiers.base import Verdict
from rlvr.verifiers.contract import verdict_from_line, verdict_line

TESTS = str(Path(__file__).resolve().parent)
ECHO = "echo_verifier:EchoVerifier"  # copies the completion into reason and details
SURROGATE = chr(0xD800)
# Characters UTF-8 cannot encode, that rewrite a screen, or that str.splitlines splits on.
UNSAFE = ({chr(c) for c in range(0xD800, 0xE000)} | {chr(c) for c in range(0x20)}
          | {chr(c) for c in range(0x7F, 0xA0)} | {"\u2028", "\u2029"}) - {"\t", "\n"}
FRAGMENTS = ["\\", "\\u", "u", "d800", "005c", "001b", "\\ud800", "\\u005c", "\\\\",
             "\\frac", "\x1b[2J", "\u2028", "\x85", "\x00", "\r", "\n", "\t", '"',
             SURROGATE, chr(0xDFFF), chr(0xDC80), "\U0001F600", "é", "ab"]


def random_text(rng: random.Random, length: int | None = None) -> str:
    """A string of escape fragments and code points drawn from the whole range."""
    parts = []
    for _ in range(rng.randint(0, 12) if length is None else length):
        pick = rng.random()
        if pick < 0.45:
            parts.append(rng.choice(FRAGMENTS))
        elif pick < 0.6:
            parts.append(chr(rng.randint(0xD800, 0xDFFF)))
        elif pick < 0.7:
            parts.append(chr(rng.randint(0, 0x9F)))
        else:
            parts.append(chr(rng.randint(0, 0x10FFFF)))
    return "".join(parts)


def joined(text: str) -> str:
    """`text` with each high surrogate followed by a low one read as the astral
    character the pair spells: what any JSON parser makes of `\\udXXX\\udYYY`, so
    all a plain JSON line can keep of such a string (the verdict escape keeps more)."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [random_text(rng) for _ in range(count)]


# --- the escape ------------------------------------------------------------------------

def test_escape_examples_written_out_by_hand():
    assert escape_text(SURROGATE) == "\\ud800"                   # six ASCII characters
    assert escape_text("\\ud800") == "\\u005cud800"              # the text itself: distinct
    assert escape_text("a\x1b[2Jb") == "a\\u001b[2Jb"
    assert escape_text("x\u2028y\x85") == "x\\u2028y\\u0085"
    assert escape_text("\\u0041") == "\\u0041"  # U+0041 is never escaped: nothing to confuse
    for kept in ("\\frac12", "1 \\\\ 2", "\\underline{x}", "tab\tand\nnewline", "é\U0001F600"):
        assert escape_text(kept) == kept
    assert unescape_text("\\u005cud800") == "\\ud800" and unescape_text("\\ud800") == SURROGATE


def test_escape_is_lossless_injective_and_writable_on_random_text():
    seen: dict[str, str] = {}
    samples = texts(4000, seed=29) + [SURROGATE, "\\ud800", "\\" + SURROGATE,
                                      "\\\\ud800", "\\u005c" + SURROGATE, "\\"]
    for text in samples:
        escaped = escape_text(text)
        assert unescape_text(escaped) == text
        assert not set(escaped) & UNSAFE
        escaped.encode("utf-8")  # never raises
        assert seen.setdefault(escaped, text) == text, (escaped, text)  # injective
    assert len(seen) == len(set(samples))


def test_escape_value_covers_keys_lists_and_tuples():
    value = {SURROGATE: [SURROGATE, ("\x00", 3)], "n": 1.5, "none": None}
    escaped = escape_value(value)
    assert escaped == {"\\ud800": ["\\ud800", ("\\u0000", 3)], "n": 1.5, "none": None}
    assert unescape_value(escaped) == value


def test_scrub_text_is_for_display_only():
    assert scrub_text("a" + SURROGATE + "\x1b") == "a\\ud800\\u001b"
    assert scrub_text("\\ud800") == "\\ud800"  # idempotent: no backslash escaping


def test_json_line_writes_any_text_as_the_same_json_value():
    for text in texts(2000, seed=7):
        line = json_line({"t": text, text: [text]})
        assert line.encode("utf-8").decode("utf-8") == line
        assert len(line.splitlines()) == 1
        assert json.loads(line) == {"t": joined(text), joined(text): [joined(text)]}


# --- the Verdict contract --------------------------------------------------------------

def test_verdicts_round_trip_through_their_lines():
    for text in texts(1500, seed=11):
        verdict = Verdict(0.5, False, text, {"error": text, "errors": [text], text: {"k": text}})
        line = json_line(verdict_line(verdict, "f.jsonl:3"))
        back = verdict_from_line(json.loads(line.encode("utf-8").decode("utf-8")))
        assert back == verdict
        assert Verdict.from_dict(verdict.to_dict()) == verdict
        assert json.loads(verdict.to_json()) == verdict.to_dict()
    invalid = Verdict.invalid("bad " + SURROGATE)
    line = verdict_line(invalid, "in.jsonl:2")
    assert line["error"] == "in.jsonl:2: bad \\ud800"
    assert verdict_from_line(json.loads(json_line(line))).details["error"] == \
        "in.jsonl:2: bad " + SURROGATE


# --- the writers, end to end -----------------------------------------------------------

def _env() -> dict[str, str]:
    return {**os.environ,
            "PYTHONPATH": os.pathsep.join([SRC, TESTS, os.environ.get("PYTHONPATH", "")])}


def _echo_cases(completions: list[str]) -> list[dict]:
    return [{"verifier": ECHO, "completion": c, "reference": None} for c in completions]


def _check_echoed(lines: list[dict], completions: list[str]) -> None:
    assert len(lines) == len(completions)
    for line, sent in zip(lines, completions):
        completion = joined(sent)  # what the verifier got: the case travelled as JSON
        verdict = verdict_from_line(line)
        assert verdict.reason == completion
        assert verdict.details == {"echo": completion, "keyed": {completion: [completion, 1]}}


def test_rlvr_verify_writes_every_line_whatever_the_text(tmp_path):
    completions = texts(60, seed=3) + [SURROGATE, "\\ud800"]
    path, out = tmp_path / "cases.jsonl", tmp_path / "out.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in _echo_cases(completions)))
    result = subprocess.run([sys.executable, "-m", "rlvr", "verify", "--input", str(path),
                             "--output", str(out), "--workers", "1", "--plugin", ECHO],
                            env=_env(), text=True,
                            capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    raw = out.read_bytes().decode("utf-8")  # strict UTF-8: no lone surrogate on disk
    _check_echoed([json.loads(x) for x in raw.split("\n")[:-1]], completions)


def test_rlvr_serve_answers_200_whatever_the_text():
    from serve_helpers import Server

    completions = texts(40, seed=5) + [SURROGATE]
    server = Server("--workers", "1", "--timeout", "30", "--plugin", ECHO)
    try:
        answer = server.post("/verify", {"items": _echo_cases(completions)}, 120)
        assert answer.status_code == 200, answer.text[-2000:]
        body = answer.content.decode("utf-8")  # strict
        _check_echoed(json.loads(body)["verdicts"], completions)
    finally:
        assert server.stop() == 0


def test_training_rollout_log_and_tracker_rows_survive_any_text(tmp_path):
    import torch

    from rlvr.data.records import TaskRecord
    from rlvr.runs.rundir import RunDir
    from rlvr.runs.trackers.base import attempt_rows
    from rlvr.training.loop import Groups, rollout_lines

    rng = random.Random(13)
    prompts = [random_text(rng, 6) for _ in range(3)]
    records = [TaskRecord(p, {"answer": p}, "math", f"id{i}") for i, p in enumerate(prompts)]
    completions = [[SimpleNamespace(text=random_text(rng, 8), finish_reason="stop",
                                    token_ids=[1, 2]) for _ in range(2)] for _ in records]
    verdicts = [[Verdict(1.0, True, c.text, {"answer": c.text}) for c in group]
                for group in completions]
    groups = Groups(records, completions, verdicts, torch.ones(3, 2), {})
    lines = rollout_lines(4, groups, torch.ones(3, 2), torch.zeros(3, 2))
    run = RunDir(tmp_path / "run").create()
    run.append_rollouts(lines)
    raw = run.rollouts.read_bytes().decode("utf-8")
    back = [json.loads(x) for x in raw.split("\n")[:-1]]
    assert len(back) == 6
    for line, group_verdicts in zip(back, [v for g in verdicts for v in g]):
        assert Verdict.from_dict(line["verdict"]) == group_verdicts
    assert [(x["prompt"], x["completion"]) for x in back] == \
        [(joined(prompts[p]), joined(completions[p][g].text)) for p in range(3) for g in range(2)]
    run.truncate_logs_after(4)  # rereads and rewrites: nothing lost or cut
    assert run.rollouts.read_bytes().decode("utf-8") == raw
    for row in attempt_rows(back, 6):
        for key in ("prompt", "completion", "reason"):
            assert not set(row[key]) & UNSAFE
            row[key].encode("utf-8")


def test_run_logs_written_by_an_older_writer_read_back_whole(tmp_path):
    """A raw U+2028 inside a JSON string (what ensure_ascii=False used to write) is not
    a line break for the run directory's reader."""
    from rlvr.runs.rundir import RunDir

    run = RunDir(tmp_path / "run").create()
    records = [{"step": 1, "note": "a\u2028b\x85c"}, {"step": 2, "note": "d"}]
    run.metrics.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                           encoding="utf-8")
    assert "\u2028" in run.metrics.read_text(encoding="utf-8")  # raw, as written then
    assert run.read_metrics() == records


# --- one hostile code item does not cost the others their grade ------------------------

RAISES = "def f(x):\n    raise ValueError(chr(0xD800))\n"
DOUBLE = {"asserts": ["assert f(2) == 4", "assert f(5) == 10"]}


def _math_case(n: int) -> dict:
    right = n % 5 != 3  # every fifth one wrong, so 'paid' is told apart from 'all 1'
    answer = n * 7 if right else n * 7 + 1
    return {"verifier": "math", "completion": f"So the answer is $\\boxed{{{answer}}}$.",
            "reference": str(n * 7)}


def test_73_lines_with_a_surrogate_raising_code_item_in_the_middle(tmp_path):
    cases = [_math_case(n) for n in range(73)]
    honest = {"verifier": "code", "completion": "def f(x):\n    return 2 * x\n",
              "reference": DOUBLE}
    wrong = {"verifier": "code", "completion": "def f(x):\n    return x + 3\n",
             "reference": DOUBLE}
    cases[5], cases[36], cases[50], cases[70] = honest, {**honest, "completion": RAISES}, \
        honest, wrong
    path, out = tmp_path / "cases.jsonl", tmp_path / "out.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    result = subprocess.run([sys.executable, "-m", "rlvr", "verify", "--input", str(path),
                             "--output", str(out), "--workers", "2"], env=_env(), text=True,
                            capture_output=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [json.loads(x) for x in out.read_bytes().decode("utf-8").split("\n")[:-1]]
    assert len(lines) == 73
    middle = lines[36]
    assert (middle["score"], middle["reason"]) == (0.0, "failed_tests")
    assert middle["details"]["errors"] == ["ValueError: \\ud800"] * 2  # the escaped text
    assert verdict_from_line(middle).details["errors"] == ["ValueError: " + SURROGATE] * 2
    expected = [1.0 if n % 5 != 3 else 0.0 for n in range(73)]
    expected[5], expected[36], expected[50], expected[70] = 1.0, 0.0, 1.0, 0.0
    assert [line["score"] for line in lines] == expected
    # after the hostile item: 36 lines, 7 wrong math answers (n % 5 == 3) and one wrong
    # code answer; the other 28 are right and each is paid
    assert sum(line["score"] for line in lines[37:]) == 28


def test_code_with_a_lone_surrogate_is_a_load_error_in_every_mode():
    """Program text that no source file can hold: graded 0, never an exception (in io
    mode it used to raise UnicodeEncodeError on the way into the sandbox)."""
    from rlvr.verifiers.base import InvalidReference
    from rlvr.verifiers.code import CodeVerifier

    verifier = CodeVerifier()
    try:
        for reference in ({"io": [{"input": "", "output": "x"}]}, DOUBLE):
            verdict = verifier.verify(f"def f(x):\n    return '{SURROGATE}'\n", reference)
            assert (verdict.score, verdict.reason) == (0.0, "load_error")
        with pytest.raises(InvalidReference, match=r"io\[1\]\.input"):
            verifier.check_reference({"io": [{"input": "", "output": ""},
                                             {"input": SURROGATE, "output": ""}]})
    finally:
        verifier.close()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
