"""The trusted orchestration in the verifier's process: keeps the two warm sandboxes,
wires the narrow channel between candidate and judge, enforces the wall clock, cleans up.

Per function check (HumanEval `check`, MBPP asserts):
  1. the candidate zygote forks a fresh confined child, given one end of a socket pair
     as its channel;
  2. the model's code is written into the channel (the judge never holds it);
  3. the other end and a job socket are passed (SCM_RIGHTS) to the judge sandbox, which
     forks a child to run the test code against a proxy of the candidate;
  4. the verdict is what the judge writes on the job socket, read with a deadline;
  5. the zygote kills every process of the check, whatever happened (the check's /tmp
     and namespaces go with them); a zygote or judge that misbehaves is killed with its
     whole sandbox and replaced.
The candidate sandbox runs in a memory cgroup of its own where one can be made
(cgroup.py), capped per check.
"""

from __future__ import annotations

import json
import os
import random
import selectors
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass

from rlvr.verifiers.code import sandbox
from rlvr.verifiers.code.cgroup import ZYGOTE_ALLOWANCE_MB, MemoryCap
from rlvr.verifiers.code.sandbox import JUDGE_UID, Limits
from rlvr.verifiers.code.sandboxed import protocol

_GRACE_S = 2.0  # on top of the check's own limit, for start-up and teardown
# The next check starts after a random pause, uniform in [0, JITTER x (the last check's
# duration - the shortest this sandbox has run)], drawn here where no check can see it.
# A check reads the wall clock when it starts, and without the pause that moment tells
# it, to a few milliseconds, when the previous one ended: a moment the previous check
# chose, so a program could pass what it learnt on in it. With the pause, a check that
# wants its end to be read to within s seconds must end within s / JITTER seconds of
# the earliest it can end, which leaves it about log2(1 + 1 / JITTER) bits, not the 7 a
# check could pass before. (The earliest is the shortest check so far, and the first
# check of a sandbox counts from 0: a program that makes every check slow gains no
# room by it.) Checks that take as long as the fastest pay nothing; the rest pay
# JITTER / 2 of the time they took beyond it, on average. A check that ran to its time
# limit pays nothing either: the limit, not the program, chose when it ended, so its end
# tells the next check one thing only (it hit the limit), and a hung program must not
# idle the worker for up to its limit again.
JITTER = 1.0
_RANDOM = random.SystemRandom()


def _spawn(command: list[str], pass_fds: tuple[int, ...] = (), **streams) -> subprocess.Popen:
    """Start a sandbox. close_fds (the default) keeps the pool worker's socket and all
    else of ours out of it; only `pass_fds` go in. bwrap reports the host PID of the
    sandbox's PID 1 on --info-fd (read here, once the sandbox exists), so that it can be
    put in a memory cgroup and `_reap` can wait until the namespace is gone."""
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
    process.init_pid = _namespace_pid(info_read) if info_read is not None else None  # type: ignore[attr-defined]
    return process


def _namespace_pid(info_fd: int, wait_s: float = 10.0) -> int | None:
    """The "child-pid" bwrap writes on its info fd (closed unread if bwrap failed)."""
    data = b""
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(info_fd, selectors.EVENT_READ)
            deadline = time.monotonic() + wait_s
            while b"}" not in data and time.monotonic() < deadline:
                if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                    continue
                chunk = os.read(info_fd, 4096)
                if not chunk:
                    break
                data += chunk
        return int(json.loads(data)["child-pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    finally:
        os.close(info_fd)


def _reap(process: subprocess.Popen) -> None:
    """Kill the sandbox and return only once its PID namespace (with every process the
    code started, daemons included) has been torn down by the kernel."""
    init_pid = getattr(process, "init_pid", None)
    # Identify the namespace's PID 1 while its parent is still our bwrap, so a PID the
    # system has since reused is never signalled or waited for.
    init = _stat(init_pid) if init_pid is not None else None
    if init is not None and init[1] != process.pid:
        init = None
    if process.poll() is None:
        process.kill()  # bwrap's PID 1 has PDEATHSIG: the whole namespace goes with it
    if init is not None:
        try:
            os.kill(init_pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    deadline = time.monotonic() + 5
    while init is not None and time.monotonic() < deadline:
        now = _stat(init_pid)
        # A namespace's PID 1 turns zombie only after the kernel has killed and reaped
        # every other process in it; the zombie itself waits for whoever adopted it.
        if now is None or now[2] != init[2] or now[0] in ("Z", "X"):
            return
        time.sleep(0.0005)


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent PID, start time) of `pid`, or None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return fields[0].decode(), int(fields[1]), int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


class _WarmSandbox:
    """A long-lived sandboxed host process, started on first use and replaced if it dies."""

    def __init__(self, host: str, config: dict, mode: str, seqpacket: bool,
                 packages: tuple = (), **bwrap_options) -> None:
        self.host, self.config, self.mode = host, config, mode
        self.seqpacket, self.bwrap_options = seqpacket, bwrap_options
        self.packages = packages  # packages.Bind: what its code may import
        self.process: subprocess.Popen | None = None
        self.control: socket.socket | None = None

    def ensure(self) -> socket.socket:
        if self.process is None or self.process.poll() is not None:
            self.close()
            kind = socket.SOCK_SEQPACKET if self.seqpacket else socket.SOCK_STREAM
            ours, theirs = socket.socketpair(socket.AF_UNIX, kind)
            config = {**self.config, "fd": theirs.fileno()}
            options = self.bwrap_options if self.mode != sandbox.UNSAFE else {}
            command = sandbox.host_command(self.host, config, self.mode, self.packages,
                                           **options)
            self.process = _spawn(command, pass_fds=(theirs.fileno(),))
            theirs.close()
            self.control = ours
        return self.control

    def close(self) -> None:
        if self.control is not None:
            self.control.close()
            self.control = None
        if self.process is not None:
            _reap(self.process)
            self.process = None


class JudgeServer(_WarmSandbox):
    """The trusted sandbox that runs test code (sandboxed/judge_host.py). It sees the
    same packages as the candidate: test code may use them too."""

    def __init__(self, limits: Limits, mode: str, packages: tuple = ()) -> None:
        # Unsafe mode runs on the host's file system, where "nobody" may not read the
        # interpreter's files (under /root, say): no uid switch there.
        drop_uid = JUDGE_UID if mode != sandbox.UNSAFE else None
        super().__init__("judge_host", sandbox.host_config(-1, limits, "judge", drop_uid),
                         mode, seqpacket=False, packages=packages)

    def submit(self, channel: socket.socket, job: socket.socket) -> None:
        """Hand the judge one check's channel and job sockets."""
        for attempt in range(2):
            try:
                socket.send_fds(self.ensure(), [b"J"], [channel.fileno(), job.fileno()])
                return
            except OSError:
                self.close()
                if attempt:
                    raise


class Zygote(_WarmSandbox):
    """The warm candidate sandbox (sandboxed/zygote.py): forks one confined child per
    check, with the whole sandbox in one memory cgroup where one can be made."""

    REPLY_S = 10.0  # how long the zygote may take to answer before it is replaced

    def __init__(self, mode: str, tmpfs_mb: int, packages: tuple = (),
                 preload: str = "never") -> None:
        # preload: when the zygote imports the packages, so that checks do not pay for
        # it: "start", "auto" (after the first check that wants them) or "never"
        names = [b.name for b in packages if b.name.isidentifier()]
        config = {"fd": -1, "tmpfs_mb": tmpfs_mb,
                  "preload": names if preload != "never" else [],
                  "preload_at_start": preload == "start"}
        super().__init__("zygote", config, mode, seqpacket=True, packages=packages,
                         as_pid_1=True,
                         root_caps=sandbox.ZYGOTE_ROOT_CAPS,
                         userns_caps=sandbox.ZYGOTE_USERNS_CAPS)
        self.memory = MemoryCap(None, "none", "not started")
        self._started: float | None = None   # when the running check started
        self._not_before = 0.0                # when the next one may (see JITTER)
        self._limit_s: float | None = None    # the running check's time limit
        self._shortest: float | None = None   # the shortest check's duration so far

    def ensure(self) -> socket.socket:
        fresh = self.process is None or self.process.poll() is not None
        control = super().ensure()
        if fresh and self.mode != sandbox.UNSAFE:
            self.memory = MemoryCap.create()
            try:
                if self.process.init_pid is None:
                    raise OSError("bwrap did not report the sandbox's PID")
                for pid in (self.process.pid, self.process.init_pid):
                    self.memory.add(pid)  # before it forks any check
            except OSError as exc:  # say so rather than claim a cap that is not there
                self.memory.remove()
                self.memory = MemoryCap(None, "none", f"could not move the sandbox in: {exc}")
        return control

    def close(self) -> None:
        super().close()
        self.memory.remove()

    def _ask(self, message: dict, fds: list[int]) -> list:
        control = self.ensure()
        try:
            socket.send_fds(control, [protocol.encode(message)], fds)
            control.settimeout(self.REPLY_S + float(message.get("wait_s", 0)))
            reply = protocol.decode(control.recv(1 << 16)[4:])
        except (OSError, protocol.ProtocolError):
            reply = None
        if type(reply) is not list or not reply or reply[0] == "failed":
            self.close()  # kills the whole sandbox, every process of the check with it
            raise OSError(f"candidate sandbox stopped answering ({reply!r:.200})")
        return reply

    def start(self, mode: str, limits: Limits, fds: list[int], wants_packages: bool = False,
              time_limit_s: float | None = None) -> None:
        """Fork the check's process; fds: [channel] or [channel, stdin, stdout].
        wants_packages: the program names a listed package (preload "auto");
        time_limit_s: the check's wall-clock limit (see JITTER)."""
        drop_uid = _drop_uid() if self.mode != sandbox.UNSAFE else None
        job = {"op": "run", "mode": mode, "limits": asdict(limits), "drop_uid": drop_uid,
               "wants_packages": wants_packages}
        self.ensure()
        self.memory.limit(limits.check_memory_mb + ZYGOTE_ALLOWANCE_MB)
        pause = self._not_before - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        self._started = time.monotonic()
        self._limit_s = time_limit_s
        if self._ask(job, fds) != ["started"]:
            self.close()
            raise OSError("candidate sandbox refused the check")

    def clean(self, wait_s: float = 0.0) -> int | None:
        """Kill every process of the check (after waiting up to `wait_s` for the main one
        to exit); the main process's exit code, if it exited. If the zygote fails at
        this, it is replaced (the next check starts in a new sandbox) and None returned:
        what the judge already decided about this check stands."""
        try:
            if self.process is None:
                return None
            reply = self._ask({"op": "reap", "wait_s": max(0.0, wait_s)}, [])
        except OSError:
            return None
        finally:
            self._pause_next()
        return reply[1] if len(reply) == 2 and type(reply[1]) is int else None

    def _pause_next(self) -> None:
        """Draw when the next check may start (JITTER): once the last one is gone."""
        if self._started is not None and self.mode != sandbox.UNSAFE:
            now = time.monotonic()
            took = now - self._started
            if self._limit_s is not None and took >= self._limit_s:
                self._started = None  # ended by its limit: nothing the program chose
                return
            floor = 0.0 if self._shortest is None else min(self._shortest, took)
            self._shortest = took if self._shortest is None else min(self._shortest, took)
            self._not_before = now + _RANDOM.uniform(0.0, JITTER * (took - floor))
            self._started = None


def _drop_uid() -> int | None:
    return sandbox.candidate_uid() if os.geteuid() == 0 else None


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


def run_function_check(judge: JudgeServer, zygote: Zygote, code: str, spec: dict,
                       limits: Limits, timeout_s: float, wants_packages: bool = False) -> dict:
    """Run `spec` (mode "check" or "asserts") against `code`; the judge's result dict,
    or {"status": "timeout"} when no verdict came back within the limit."""
    ours, theirs = socket.socketpair()
    job_ours, job_theirs = socket.socketpair()
    try:
        zygote.start("serve", limits, [theirs.fileno()], wants_packages, timeout_s)
        theirs.close()
        ours.sendall(protocol.encode(["load", code]))
        judge.submit(ours, job_theirs)
        job_theirs.close()
        ours.close()
        job_ours.sendall(protocol.encode({**spec, "timeout_s": timeout_s}))
        result = _read_result(job_ours, time.monotonic() + timeout_s + _GRACE_S)
    except (OSError, protocol.ProtocolError) as exc:
        result = {"status": "sandbox_error", "message": str(exc)}
    finally:
        for sock in (ours, theirs, job_ours, job_theirs):
            sock.close()
        zygote.clean()
    return result if result is not None else {"status": "timeout"}


@dataclass
class ProgramRun:
    """One stdin/stdout run: exit code (None if killed), captured stdout, why it stopped."""

    exit_code: int | None
    stdout: bytes
    timed_out: bool = False
    overflowed: bool = False


def run_program(zygote: Zygote, code: str, stdin: bytes, limits: Limits, timeout_s: float,
                output_cap: int, wants_packages: bool = False) -> ProgramRun:
    """Run `code` as a program on `stdin` in a fresh child; stdout capped at `output_cap`."""
    deadline = time.monotonic() + timeout_s
    program_read, program_write = os.pipe()
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    try:
        zygote.start("io", limits, [program_read, stdin_read, stdout_write], wants_packages,
                     timeout_s)
    finally:
        for fd in (program_read, stdin_read, stdout_write):
            os.close(fd)
    try:
        with open(program_write, "wb") as program:  # the child reads it all first
            program.write(code.encode("utf-8"))
    except BrokenPipeError:
        pass
    open_fds = {"stdin": stdin_write, "stdout": stdout_read}
    try:
        run = _pump(open_fds, stdin, deadline, output_cap)
    finally:
        for fd in open_fds.values():
            os.close(fd)
    exit_code = zygote.clean(wait_s=0.0 if run.timed_out or run.overflowed
                             else deadline - time.monotonic())
    run.exit_code = exit_code
    if exit_code is None and not run.overflowed:
        run.timed_out = True
    return run


def _pump(fds: dict[str, int], stdin: bytes, deadline: float, cap: int) -> ProgramRun:
    """Feed stdin and collect stdout until EOF, deadline or cap, without blocking.
    Closes stdin once written (the program sees EOF) and drops it from `fds`."""
    out, pending = bytearray(), memoryview(stdin)
    stdin_fd, stdout_fd = fds["stdin"], fds["stdout"]
    os.set_blocking(stdin_fd, False)
    os.set_blocking(stdout_fd, False)
    with selectors.DefaultSelector() as selector:
        selector.register(stdout_fd, selectors.EVENT_READ)
        if pending:
            selector.register(stdin_fd, selectors.EVENT_WRITE)
        else:
            os.close(fds.pop("stdin"))
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return ProgramRun(None, bytes(out), timed_out=True)
            for key, _ in selector.select(timeout=left):
                if key.fd == stdin_fd:
                    try:
                        pending = pending[os.write(stdin_fd, pending[:65536]):]
                    except BrokenPipeError:
                        pending = pending[:0]
                    if not pending:
                        selector.unregister(stdin_fd)
                        os.close(fds.pop("stdin"))
                    continue
                chunk = os.read(stdout_fd, 65536)
                if not chunk:
                    return ProgramRun(None, bytes(out))
                out += chunk
                if len(out) > cap:
                    return ProgramRun(None, bytes(out[:cap]), overflowed=True)
