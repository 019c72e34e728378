"""The code verifier ("code"): runs the model's program against the reference's tests in
a bubblewrap sandbox, with the verdict decided by a separate trusted process.

Reference shapes (docs/contracts.md), each with optional "timeout" (wall seconds for the whole
check) and "memory_mb" (address space of the model's process):
  {"test": "def check(candidate): ...", "entry_point": "f", "prompt"?: "..."}
        HumanEval style, all or nothing. "prompt" (HumanEval's own field) is trusted
        code run before the model's code and before the test, for helpers both use.
  {"asserts": ["assert f(1) == 2", ...], "setup"?: "import math", "prompt"?: "..."}
        MBPP style; score = fraction of asserts that hold, each on a fresh fork.
        "setup" is trusted code run on the judge's side before the asserts (MBPP's
        test_setup_code); "prompt" is prepended to the model's program.
  {"io": [{"input": "...", "output": "..."}], "float_tolerance"?: 1e-6}
        stdin/stdout; score = fraction of cases; whitespace-tolerant token comparison.
See docs/CODE_SANDBOX.md for the threat model.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import replace
from typing import Any

from rlvr.verifiers.base import InvalidReference, Verdict
from rlvr.verifiers.code.extraction import extract_code
from rlvr.verifiers.code.io_compare import outputs_match
from rlvr.verifiers.code.packages import DEFAULT_PACKAGES, check_names, resolve
from rlvr.verifiers.code.runner import JudgeServer, Zygote, run_function_check, run_program
from rlvr.verifiers.code.sandbox import UNSAFE, Limits, probe

MAX_TIMEOUT_S = 30.0     # keep the registry's per-item limit (60 s) above any check
MAX_MEMORY_MB = 2048     # per process; a check may hold Limits.processes of them
MAX_CODE_CHARS = 200_000
PRELOAD_CHOICES = ("auto", "start", "never")
CHECK_MEMORY_FACTOR = 2  # a check's whole process tree: 2 x one process's limit (cgroup)
_SHAPES = ("test", "asserts", "io")


def _number(reference: dict, key: str, low: float, high: float) -> None:
    value = reference.get(key)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise InvalidReference(f"code: field {key!r} must be a number in [{low}, {high}], "
                               f"got {value!r}")


def _strings(reference: dict, key: str, required: bool = False) -> None:
    value = reference.get(key)
    if value is None and not required:
        return
    if not isinstance(value, str) or (required and not value.strip()):
        raise InvalidReference(f"code: field {key!r} must be a non-empty string")


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_io_cases(cases: Any) -> None:
    if not isinstance(cases, list) or not cases:
        raise InvalidReference("code: field 'io' must be a non-empty list of cases")
    for index, case in enumerate(cases):
        if not isinstance(case, dict) or not all(isinstance(case.get(k), str)
                                                 for k in ("input", "output")):
            raise InvalidReference(f"code: io[{index}] must be {{'input': str, 'output': str}}")
        if not _is_utf8(case["input"]):  # it is fed to the program as UTF-8 bytes
            raise InvalidReference(f"code: io[{index}].input is not UTF-8 text "
                                   "(it holds a lone surrogate)")


def _check_preload(value: Any) -> None:
    if not isinstance(value, str) or value not in PRELOAD_CHOICES:
        raise ValueError(f"code: option 'preload_packages' must be one of "
                         f"{', '.join(PRELOAD_CHOICES)}; got {value!r}")


def _check_strict_numeric(value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"code: option 'strict_numeric' must be true or false; got {value!r}")


class CodeVerifier:
    """sandbox:   "bwrap" (default) or "none-unsafe" (no isolation; trusted code only).
    timeout_s: wall seconds per check unless the reference sets "timeout".
    memory_mb: address-space limit of the model's process unless the reference sets one.
    packages:  installed distributions the model's code (and the test code) may import,
               read-only, with their own dependencies; default ["numpy"], [] for the
               standard library only. One that is not installed is a PackageError
               (a ValueError) here, before anything is graded (packages.py).
    preload_packages: when the warm candidate sandbox imports them once, so that a
               check using them does not pay the import (~150 ms for numpy): "auto"
               (default: after the first program that names one), "start", or "never".
               Each check still gets a fresh copy (a fork), and its memory_mb on top
               of the address space they take. A preloaded sandbox forks more slowly
               (~3 ms per MBPP assert here), hence not before a program needs it.
    strict_numeric: (default True) numpy's comparisons in the trusted test code are
               shape-strict, so `return []` cannot pass `np.allclose(f(x), 2.0)`: a
               whole-array comparison (allclose, testing.assert_allclose, ...) needs
               equal shapes, an elementwise one (isclose) refuses an empty side against
               a non-empty one (sandboxed/strict_numeric.py; docs/CODE_SANDBOX.md,
               "numpy checks"). Costs nothing for a check whose code never names numpy.
    """

    name = "code"
    # Which options a request or a data line may set is declared with the verifier's
    # spec (rlvr.verifiers.registry: packages, timeout_s, strict_numeric); the rest, such
    # as `sandbox` and `memory_mb`, are the operator's.

    def __init__(self, sandbox: str = "bwrap", timeout_s: float = 6.0, memory_mb: int = 512,
                 packages: list[str] | tuple[str, ...] = DEFAULT_PACKAGES,
                 preload_packages: str = "auto", strict_numeric: bool = True) -> None:
        if sandbox not in ("bwrap", UNSAFE):
            raise ValueError(f"code: sandbox must be 'bwrap' or {UNSAFE!r}, got {sandbox!r}")
        if not 0 < timeout_s <= MAX_TIMEOUT_S:
            raise ValueError(f"code: timeout_s must be in (0, {MAX_TIMEOUT_S}], got {timeout_s!r}")
        if not 64 <= memory_mb <= MAX_MEMORY_MB:
            raise ValueError(f"code: memory_mb must be in [64, {MAX_MEMORY_MB}], got {memory_mb!r}")
        _check_strict_numeric(strict_numeric)
        self.mode, self.timeout_s, self.memory_mb = sandbox, float(timeout_s), int(memory_mb)
        self.strict_numeric = strict_numeric
        self.packages = check_names(packages)
        binds = resolve(self.packages)  # PackageError now, naming what is missing
        if self.mode == "bwrap":
            probe()  # refuse now, with the reason, rather than score everything 0
        self._judge = JudgeServer(Limits(cpu_s=3600, memory_mb=1024, processes=1024), self.mode,
                                  binds)
        _check_preload(preload_packages)
        # what a program must name for "auto" to preload (a hint, trusted side only)
        self._package_names = [b.name for b in binds if b.name.isidentifier()]
        self._zygote = Zygote(self.mode, Limits().tmpfs_mb, binds, preload_packages)
        # One check at a time per instance: the two sandboxes serve one check each.
        # (VerifierPool runs one instance per worker process, so this never waits there.)
        self._lock = threading.Lock()

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> None:
        """What the constructor would refuse about `packages`, without starting a
        sandbox (the trainer calls it when its config loads: registry.check_options)."""
        resolve(check_names(options.get("packages", DEFAULT_PACKAGES)))
        _check_preload(options.get("preload_packages", "auto"))
        _check_strict_numeric(options.get("strict_numeric", True))

    def check_reference(self, reference: Any) -> None:
        if not isinstance(reference, dict):
            raise InvalidReference(f"code: reference must be an object, got {type(reference).__name__}")
        shapes = [key for key in _SHAPES if key in reference]
        if len(shapes) != 1:
            raise InvalidReference("code: reference needs exactly one of 'test' (with "
                                   f"'entry_point'), 'asserts' or 'io'; got keys {sorted(reference)}")
        if shapes[0] == "test":
            _strings(reference, "test", required=True)
            _strings(reference, "entry_point", required=True)
            if "def check(" not in reference["test"]:
                raise InvalidReference("code: field 'test' must define check(candidate)")
            _strings(reference, "prompt")
        elif shapes[0] == "asserts":
            asserts = reference["asserts"]
            if not isinstance(asserts, list) or not asserts or not all(
                    isinstance(a, str) and a.strip() for a in asserts):
                raise InvalidReference("code: field 'asserts' must be a non-empty list of strings")
            _strings(reference, "setup")
            _strings(reference, "prompt")
        else:
            _check_io_cases(reference["io"])
            _number(reference, "float_tolerance", 0.0, 1.0)
        _number(reference, "timeout", 0.1, MAX_TIMEOUT_S)
        _number(reference, "memory_mb", 64, MAX_MEMORY_MB)

    def verify(self, completion: str, reference: Any) -> Verdict:
        self.check_reference(reference)
        with self._lock:
            return self._verify(completion, reference)

    def _verify(self, completion: str, reference: Any) -> Verdict:
        code = extract_code(completion)
        if code is None:
            return Verdict.wrong("no_code")
        if len(code) > MAX_CODE_CHARS:
            return Verdict.wrong("code_too_long", chars=len(code))
        if not _is_utf8(code):  # a source file cannot hold it; the sandbox gets bytes
            return Verdict.wrong("load_error", error="the program is not UTF-8 text "
                                 "(it holds a lone surrogate)")
        timeout_s = float(reference.get("timeout", self.timeout_s))
        memory_mb = int(reference.get("memory_mb", self.memory_mb))
        limits = Limits(cpu_s=math.ceil(timeout_s) + 1, memory_mb=memory_mb,
                        check_memory_mb=CHECK_MEMORY_FACTOR * memory_mb)
        if "io" in reference:
            return self._verify_io(code, reference, limits, timeout_s)
        prompt = reference.get("prompt") or ""
        if "test" in reference:
            spec = {"mode": "check", "test": reference["test"], "prompt": prompt,
                    "entry_point": reference["entry_point"]}
        else:
            spec = {"mode": "asserts", "asserts": reference["asserts"],
                    "setup": reference.get("setup") or ""}
        spec["strict_numeric"] = self.strict_numeric
        program = f"{prompt}\n{code}" if prompt else code
        result = run_function_check(self._judge, self._zygote, program, spec, limits, timeout_s,
                                    self._wants_packages(program))
        if result.get("status") == "test_error":
            return self._blame_test_error(result, reference, spec, limits, timeout_s)
        return self._name_importable(_function_verdict(result, timeout_s))

    def _wants_packages(self, program: str) -> bool:
        return any(name in program for name in self._package_names)

    def _name_importable(self, verdict: Verdict) -> Verdict:
        """A program that failed on an import it may not make (`import torch`) is told
        what it may import: the standard library and the configured packages."""
        said = [verdict.details.get("error") or ""] + list(verdict.details.get("errors") or [])
        if any("ModuleNotFoundError" in str(text) for text in said):
            importable = ["the standard library", *self.packages]
            return replace(verdict, details={**verdict.details, "importable": importable})
        return verdict

    def _blame_test_error(self, result: dict, reference: dict, spec: dict, limits: Limits,
                          timeout_s: float) -> Verdict:
        """The judge saw the test code fail before the candidate was involved. Only the
        reference may be blamed for that, so it is checked on its own: the same test
        against a stub that defines the entry point and does nothing. If the stub's run
        fails the same way the reference is invalid; otherwise the candidate caused it
        (scores 0, never voids its own verdict)."""
        prompt = reference.get("prompt") or ""
        stub = ""
        if "entry_point" in reference and reference["entry_point"].isidentifier():
            stub = f"def {reference['entry_point']}(*args, **kwargs):\n    return None\n"
        again = run_function_check(self._judge, self._zygote, f"{prompt}\n{stub}", spec,
                                   limits, timeout_s)
        if again.get("status") == "test_error":
            raise InvalidReference(f"code: the reference's test code fails on its own: "
                                   f"{again.get('message')}")
        return Verdict.wrong("candidate_crashed", error=f"judge: {result.get('message')}"[:500])

    def _verify_io(self, code: str, reference: dict, limits: Limits, timeout_s: float) -> Verdict:
        deadline = time.monotonic() + timeout_s
        outcomes = []
        for case in reference["io"]:
            left = deadline - time.monotonic()
            if left <= 0:
                outcomes.append("timeout")
                continue
            cap = max(1 << 16, 2 * len(case["output"]) + 4096)
            run = run_program(self._zygote, code, case["input"].encode("utf-8"), limits, left, cap,
                              self._wants_packages(code))
            if run.timed_out:
                outcomes.append("timeout")
            elif run.overflowed:
                outcomes.append("output_limit")
            elif run.exit_code != 0:
                outcomes.append(f"exit_code_{run.exit_code}")
            else:
                text = run.stdout.decode("utf-8", errors="replace")
                ok = outputs_match(text, case["output"], reference.get("float_tolerance"))
                outcomes.append("ok" if ok else "wrong_output")
        passed = sum(o == "ok" for o in outcomes)
        score = passed / len(outcomes)
        reason = "correct" if passed == len(outcomes) else (
            "timeout" if all(o == "timeout" for o in outcomes) else "failed_tests")
        return Verdict(score, passed == len(outcomes), reason,
                       {"passed_tests": passed, "total_tests": len(outcomes), "cases": outcomes})

    @property
    def memory_cap(self) -> str:
        """Where each check's whole memory is capped: a cgroup, or why there is none
        (then only RLIMIT_AS per process and RLIMIT_NPROC processes bound it)."""
        if self.mode == UNSAFE:
            return "none (unsafe mode)"
        self._zygote.ensure()
        return self._zygote.memory.describe()

    def close(self) -> None:
        self._judge.close()
        self._zygote.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def _function_verdict(result: dict, timeout_s: float) -> Verdict:
    status = result.get("status")
    if status == "ok":
        results = [r is True for r in result.get("results", [])]
        passed = sum(results)
        total = max(1, len(results))
        errors = [e for e in result.get("errors", []) if e][:3]
        if result.get("timed_out") and passed == 0:
            return Verdict(0.0, False, "timeout", {"limit_s": timeout_s, "total_tests": total})
        reason = "correct" if passed == total else "failed_tests"
        return Verdict(passed / total, passed == total, reason,
                       {"passed_tests": passed, "total_tests": total, "errors": errors})
    if status == "timeout":
        return Verdict(0.0, False, "timeout", {"limit_s": timeout_s})
    if status == "load_error":
        message = str(result.get("message", ""))
        reason = "syntax_error" if "SyntaxError" in message or "IndentationError" in message else "load_error"
        return Verdict.wrong(reason, error=message[:500])
    if status == "broken":
        return Verdict.wrong("candidate_crashed", error=str(result.get("message", ""))[:500])
    return Verdict.error(f"sandbox: {result.get('message', status)}")
