"""The trusted orchestration in the verifier's process: starts sandboxes, wires the
narrow channel between candidate and judge, enforces the wall clock, cleans up.

Per function check (HumanEval `check`, MBPP asserts):
  1. a fresh candidate sandbox is started with one end of a socket pair as its channel;
  2. the model's code is written into the channel (the judge never holds it);
  3. the other end and a job socket are passed (SCM_RIGHTS) to the warm judge sandbox,
     which forks a child to run the test code against a proxy of the candidate;
  4. the verdict is what the judge writes on the job socket, read with a deadline;
  5. the candidate sandbox is killed - with it its PID namespace and every process
     the model started - and reaped, whatever happened.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import time
from dataclasses import dataclass

from rlvr.verifiers.code import sandbox
from rlvr.verifiers.code.sandbox import JUDGE_UID, Limits
from rlvr.verifiers.code.sandboxed import protocol

_GRACE_S = 2.0  # on top of the check's own limit, for start-up and teardown


def _spawn(command: list[str], pass_fds: tuple[int, ...] = (), **streams) -> subprocess.Popen:
    """Start a sandbox. close_fds (the default) keeps the pool worker's socket and all
    else of ours out of it; only `pass_fds` go in. bwrap reports the host PID of the
    sandbox's PID 1 on --info-fd, so `_reap` can wait until the namespace is gone."""
    streams.setdefault("stdin", subprocess.DEVNULL)
    streams.setdefault("stdout", subprocess.DEVNULL)
    streams.setdefault("stderr", subprocess.DEVNULL)
    info_read = info_write = None
    if command[0] == sandbox.find_bwrap():
        info_read, info_write = os.pipe()
        command = [command[0], "--info-fd", str(info_write)] + command[1:]
        pass_fds = pass_fds + (info_write,)
    try:
        process = subprocess.Popen(command, pass_fds=pass_fds, close_fds=True, **streams)
    finally:
        if info_write is not None:
            os.close(info_write)
    process.info_fd = info_read  # type: ignore[attr-defined]
    return process


def _namespace_pid(process: subprocess.Popen) -> int | None:
    info_fd = getattr(process, "info_fd", None)
    if info_fd is None:
        return None
    try:
        os.set_blocking(info_fd, False)
        info = json.loads(os.read(info_fd, 4096) or b"{}")
        return int(info["child-pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    finally:
        os.close(info_fd)


def _reap(process: subprocess.Popen) -> None:
    """Kill the sandbox and return only once its PID namespace (with every process the
    code started, daemons included) has been torn down by the kernel."""
    init_pid = _namespace_pid(process)
    if process.poll() is None:
        process.kill()  # bwrap's PID 1 has PDEATHSIG: the whole namespace goes with it
    if init_pid is not None:
        try:
            os.kill(init_pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    deadline = time.monotonic() + 5
    while init_pid is not None and _alive(init_pid) and time.monotonic() < deadline:
        time.sleep(0.0005)


def _alive(pid: int) -> bool:
    """False once `pid` has exited. A PID-namespace init turns zombie only after the
    kernel has killed and reaped every other process in its namespace; its own zombie
    waits for whichever host process adopted it, which may take a while."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


class JudgeServer:
    """The warm trusted sandbox. Started on first use, restarted if it died."""

    def __init__(self, limits: Limits, mode: str) -> None:
        self.limits, self.mode = limits, mode
        self.process: subprocess.Popen | None = None
        self.control: socket.socket | None = None

    def _start(self) -> None:
        ours, theirs = socket.socketpair()
        config = sandbox.host_config(theirs.fileno(), self.limits, "judge", JUDGE_UID)
        self.process = _spawn(sandbox.host_command("judge_host", config, self.mode),
                              pass_fds=(theirs.fileno(),))
        theirs.close()
        self.control = ours

    def submit(self, channel: socket.socket, job: socket.socket) -> None:
        """Hand the judge one check's channel and job sockets."""
        for attempt in range(2):
            if self.process is None or self.process.poll() is not None:
                self.close()
                self._start()
            try:
                socket.send_fds(self.control, [b"J"], [channel.fileno(), job.fileno()])
                return
            except OSError:
                if attempt:
                    raise
                self.close()

    def close(self) -> None:
        if self.control is not None:
            self.control.close()
            self.control = None
        if self.process is not None:
            _reap(self.process)
            self.process = None


def _read_result(job: socket.socket, deadline: float) -> dict | None:
    """The judge's result frame, or None if none came in time."""
    buffer = b""
    job.setblocking(False)
    with selectors.DefaultSelector() as selector:
        selector.register(job, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                continue
            chunk = job.recv(1 << 20)
            if not chunk:
                break
            buffer += chunk
            if len(buffer) >= 4 and len(buffer) >= 4 + int.from_bytes(buffer[:4], "big"):
                result = protocol.decode(buffer[4:])
                return result if type(result) is dict else None
    return None


def run_function_check(judge: JudgeServer, code: str, spec: dict, limits: Limits,
                       mode: str, timeout_s: float) -> dict:
    """Run `spec` (mode "check" or "asserts") against `code`; the judge's result dict,
    or {"status": "timeout"} when no verdict came back within the limit."""
    ours, theirs = socket.socketpair()
    config = sandbox.host_config(theirs.fileno(), limits, "serve", sandbox.candidate_uid())
    candidate = _spawn(sandbox.host_command("candidate_host", config, mode),
                       pass_fds=(theirs.fileno(),))
    theirs.close()
    job_ours, job_theirs = socket.socketpair()
    try:
        ours.sendall(protocol.encode(["load", code]))
        judge.submit(ours, job_theirs)
        job_theirs.close()
        ours.close()
        job_ours.sendall(protocol.encode({**spec, "timeout_s": timeout_s}))
        result = _read_result(job_ours, time.monotonic() + timeout_s + _GRACE_S)
    except (OSError, protocol.ProtocolError) as exc:
        result = {"status": "sandbox_error", "message": str(exc)}
    finally:
        for sock in (ours, job_ours, job_theirs):
            sock.close()
        _reap(candidate)
    return result if result is not None else {"status": "timeout"}


@dataclass
class ProgramRun:
    """One stdin/stdout run: exit code (None if killed), captured stdout, why it stopped."""

    exit_code: int | None
    stdout: bytes
    timed_out: bool = False
    overflowed: bool = False


def run_program(code: str, stdin: bytes, limits: Limits, mode: str, timeout_s: float,
                output_cap: int) -> ProgramRun:
    """Run `code` as a program on `stdin` in a fresh sandbox; stdout capped at `output_cap`."""
    read_end, write_end = os.pipe()
    config = sandbox.host_config(read_end, limits, "io", sandbox.candidate_uid())
    process = _spawn(sandbox.host_command("candidate_host", config, mode), pass_fds=(read_end,),
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    os.close(read_end)
    try:
        with open(write_end, "wb") as program:  # the host reads it all before anything else
            program.write(code.encode("utf-8"))
    except BrokenPipeError:
        pass
    try:
        return _pump(process, stdin, time.monotonic() + timeout_s, output_cap)
    finally:
        _reap(process)


def _pump(process: subprocess.Popen, stdin: bytes, deadline: float, cap: int) -> ProgramRun:
    """Feed stdin and collect stdout until exit, deadline or cap, without blocking."""
    out, pending = bytearray(), memoryview(stdin)
    os.set_blocking(process.stdin.fileno(), False)
    os.set_blocking(process.stdout.fileno(), False)
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if pending:
            selector.register(process.stdin, selectors.EVENT_WRITE)
        else:
            process.stdin.close()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return ProgramRun(None, bytes(out), timed_out=True)
            for key, _ in selector.select(timeout=left):
                if key.fileobj is process.stdin:
                    try:
                        pending = pending[os.write(process.stdin.fileno(), pending[:65536]):]
                    except BrokenPipeError:
                        pending = pending[:0]
                    if not pending:
                        selector.unregister(process.stdin)
                        process.stdin.close()
                    continue
                chunk = os.read(process.stdout.fileno(), 65536)
                if not chunk:
                    selector.unregister(process.stdout)
                    return ProgramRun(_wait_exit(process, deadline), bytes(out))
                out += chunk
                if len(out) > cap:
                    return ProgramRun(None, bytes(out[:cap]), overflowed=True)


def _wait_exit(process: subprocess.Popen, deadline: float) -> int | None:
    try:
        return process.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return None
