"""The untrusted side: runs the model's code in the sandbox and answers calls.

Nothing here is trusted once the model's code has run: it shares this process and may
rewrite any of it. That is by design. This process only ever *answers*; the judge
(another sandbox) decides, from plain data alone, whether an answer is right. The most
a compromised candidate can do is send wrong data, malformed data, or nothing.

Serve mode messages (judge -> candidate, over the channel fd):
  ["load", code]            run the code once; reply ["loaded", [callable names]]
                            or ["load_error", "Type: message"]
  ["call", name, args, kw]  reply ["return", value] or ["raise", type name, message]
  ["fork"]                  start an isolated child for one test; reply ["forked"] from
                            it; ["end"] makes it exit and the parent replies ["ended", code]
IO mode: read the program from the channel fd, then run it as __main__ on the real
stdin/stdout; the verifier compares the output.
`run` is the entry point of each check's process, forked by zygote.py.
"""

from __future__ import annotations

import os
import sys


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:300]}"


def _callable_names(namespace: dict) -> list:
    return sorted(name for name, value in namespace.items()
                  if type(name) is str and not name.startswith("__") and callable(value))


def _plain(value, depth: int = 0):
    """`value` with numpy's scalars and arrays turned into the built-in values they
    hold (`tolist`), so a numpy solution that returns `np.float64(2.0)` answers 2.0.
    Done here, in the untrusted process, and only when the value is not plain data
    already: the judge still sees, and checks by exact type, nothing but plain data.
    Only numpy's own types are converted (a subclass defined by the model's code is
    not), and what `tolist` returns must be plain data like any other answer."""
    if depth > 100:
        raise TypeError("value nested too deeply")
    kind = type(value)
    if kind.__module__ == "numpy" and hasattr(kind, "tolist"):
        return value.tolist()
    if kind is list or kind is tuple or kind is set:
        return kind(_plain(item, depth + 1) for item in value)
    if kind is dict:
        return {_plain(k, depth + 1): _plain(v, depth + 1) for k, v in value.items()}
    return value


def _answer_call(proto, fd: int, namespace: dict, message: list) -> None:
    _, name, args, kwargs = message
    try:
        value = namespace[name](*args, **kwargs)
        try:
            frame = proto.encode(["return", value], proto.CANDIDATE_FRAME_BYTES)
        except TypeError:  # not plain data: maybe numpy's, which has a plain form
            frame = proto.encode(["return", _plain(value)], proto.CANDIDATE_FRAME_BYTES)
    except BaseException as exc:  # the model's exception becomes data for the judge
        frame = proto.encode(["raise", type(exc).__name__, str(exc)[:300]])
    proto.write_all(fd, frame)


def _serve(proto, fd: int, namespace: dict) -> None:
    while True:
        message = proto.read_frame(fd)
        kind = message[0]
        if kind == "call":
            _answer_call(proto, fd, namespace, message)
        elif kind == "fork":
            pid = os.fork()
            if pid == 0:
                proto.write_frame(fd, ["forked"])
                continue  # the child serves this test's calls until "end"
            _, status = os.waitpid(pid, 0)
            proto.write_frame(fd, ["ended", os.waitstatus_to_exitcode(status)])
        elif kind == "end":
            os._exit(0)
        else:
            return


def _load(proto, fd: int) -> dict:
    message = proto.read_frame(fd)
    namespace = {"__name__": "candidate", "__builtins__": __builtins__}
    try:
        exec(compile(message[1], "<candidate>", "exec"), namespace)
    except BaseException as exc:
        proto.write_frame(fd, ["load_error", _describe(exc)])
        raise SystemExit(0)
    proto.write_all(fd, proto.encode(["loaded", _callable_names(namespace)],
                                     proto.CANDIDATE_FRAME_BYTES))
    return namespace


def _run_program(fd: int) -> int:
    """IO mode: the program arrives on `fd`; it runs as __main__ on the real stdin/stdout.
    Returns the exit code the program chose (1 for an uncaught exception)."""
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    os.close(fd)
    try:
        code = compile(b"".join(chunks).decode("utf-8"), "<program>", "exec")
        exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
        status = 0
    except SystemExit as exc:
        status = exc.code if type(exc.code) is int else (0 if exc.code is None else 1)
    except BaseException:
        status = 1
    try:
        sys.stdout.flush()
    except BaseException:
        status = 1
    return status


def run(proto, confine, job: dict, channel: int) -> int:
    """Entry point of a freshly forked check process (see zygote.py): confine, then run
    the model's code in serve or IO mode. Returns the exit status."""
    confine.confine(job)
    if job["mode"] == "io":
        return _run_program(channel)
    _serve(proto, channel, _load(proto, channel))
    return 0
