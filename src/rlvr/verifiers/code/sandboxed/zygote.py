"""The warm candidate sandbox: one long-lived bubblewrap sandbox per verifier process
that forks a fresh, confined process for each check.

Starting bwrap and an interpreter costs tens of milliseconds; a fork of this small,
already-started process costs about one. What a fresh sandbox per check would give,
the zygote gets per check from the kernel instead (fresh.py):
- each check starts in new PID, mount, IPC and UTS namespaces with an empty tmpfs /tmp
  and its own /proc. The check's process is PID 1 of its new PID namespace: as root
  a direct child of the zygote, in bwrap's user namespace the child of a *warden*
  (fresh.py says why). The zygote prepares the next check's process as soon as a
  check is over; it waits, ready, for its job, so the check itself pays almost
  nothing for it. Nothing one check writes (files, the PID counter) exists in the
  next, and the filter of confine.py keeps checks from creating IPC objects, keys or
  network state at all;
- the zygote is PID 1 of the sandbox's own PID namespace, which no check can see (a
  check sees only its own namespace), and non-dumpable;
- the check's process closes the control socket before anything untrusted runs, then
  confines itself (rlimits, no-new-privs, seccomp, no capabilities; as root a uid of
  its own);
- after the check ("reap"), the zygote kills every other process in its namespace with
  kill(-1, SIGKILL) - atomic with respect to fork, and reaching the checks' nested
  namespaces - and answers: none of them runs another instruction. Before it reads
  the next request it reaps them all, so the kernel has freed the check's namespaces
  and /tmp (and its processes no longer count against RLIMIT_NPROC) before the next
  check starts.

The unsafe mode (no bwrap) has no namespaces: there a check runs in a fresh temporary
directory that is removed afterwards, and only its process group is killed.

Control messages (SOCK_SEQPACKET, one frame per message):
  {"op": "run", "mode", "limits", "drop_uid"} + fds [channel] (serve mode) or
      [program, stdin, stdout] (io mode) -> ["started"]
  {"op": "reap", "wait_s"} -> ["clean", exit code of the check's process or None]
  anything that fails inside the zygote -> ["failed", why]; the verifier replaces it
"""

from __future__ import annotations

import os
import signal
import socket
import tempfile
import time

import fresh

_TMP = "/tmp"
_IN_SANDBOX = False


def _child(proto, confine, host, job: dict, fds: list, workdir: str) -> None:
    """The check's process: wire the descriptors, then confine and run (candidate_host)."""
    os.setsid()  # its own process group: what the unsafe mode kills afterwards
    os.chdir(workdir)
    channel, stdin, stdout = fds if len(fds) == 3 else (fds[0], -1, -1)
    devnull = os.open("/dev/null", os.O_RDWR)
    os.dup2(stdin if stdin >= 0 else devnull, 0)
    os.dup2(stdout if stdout >= 0 else devnull, 1)
    os.dup2(devnull, 2)
    for fd in (devnull, stdin, stdout):
        if fd > 2:
            os.close(fd)
    os.closerange(3, channel)  # nothing of the zygote's stays open but the channel
    os.closerange(channel + 1, 1 << 16)
    status = 1
    try:
        status = host.run(proto, confine, job, channel)
    finally:
        os._exit(status if 0 <= status < 256 else 1)


def _warden(proto, confine, host, tmpfs_mb: int, jobs: int) -> None:
    """Make a check's namespaces and its process (their PID 1), which waits on `jobs`
    for the check's job and descriptors; then exit as that process does. Trusted, and
    invisible to the check (it lives in the zygote's namespace)."""
    status = 125
    try:
        fresh.enter_check_namespaces(_TMP, tmpfs_mb)
        pid = os.fork()
        if pid == 0:
            _await_job(proto, confine, host, jobs)
        # Hold none of the check's descriptors: the judge and the verifier must see
        # them close as soon as the check's process is gone.
        os.closerange(0, 1 << 16)
        status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        if status < 0:  # killed by a signal: die of the same one, so the zygote sees it
            signal.signal(-status, signal.SIG_DFL)
            os.kill(os.getpid(), -status)
    finally:
        os._exit(status if 0 <= status < 256 else 1)


def _await_job(proto, confine, host, jobs: int) -> None:
    """The check's process, ready: wait for the job. No job (the socket closed) is the
    start-up self-test, which succeeds once the process got this far."""
    status = 1
    try:
        fresh.prepare_check_process()
        with socket.socket(fileno=jobs) as sock:
            message, fds, _, _ = socket.recv_fds(sock, 1 << 16, 3)
        if message and len(fds) in (1, 3):
            _child(proto, confine, host, proto.decode(message[4:]), fds, _TMP)
        status = 0 if not message else 1
    finally:
        os._exit(status)


def _prepare(proto, confine, host, config: dict, own_pid_ns: int | None
             ) -> tuple[int, socket.socket]:
    """The next check's process, started while no check runs: its namespaces, /tmp and
    /proc are ready before the verifier asks. Returns the PID of our child (the check's
    process, or as non-root its warden) and the socket the check's process waits on."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    if own_pid_ns is not None:
        fresh.next_child_in_new_pid_namespace()
    try:
        pid = os.fork()
    finally:  # in the zygote (fork failed or not): our next children are ours again
        if own_pid_ns is not None and locals().get("pid") != 0:
            fresh.children_in_own_pid_namespace(own_pid_ns)
    if pid == 0:
        os.closerange(config["fd"], config["fd"] + 1)  # the control socket
        os.close(ours.detach())
        if own_pid_ns is None:
            _warden(proto, confine, host, config["tmpfs_mb"], theirs.detach())
        try:
            fresh.enter_check_namespaces(_TMP, config["tmpfs_mb"], pid=False)
        except BaseException:  # never run a check without its own namespaces
            os._exit(125)
        _await_job(proto, confine, host, theirs.detach())
    theirs.close()
    return pid, ours


def _hand_over(proto, confine, host, job: dict, fds: list, config: dict, state: dict) -> int:
    """Give the job and its descriptors to the prepared check process (or to a new one,
    if none is ready or it died); returns the PID of our child (process or warden)."""
    for attempt in range(2):
        pid, sock = state.pop("ready", None) or _prepare(proto, confine, host, config,
                                                         state["own_pid_ns"])
        try:
            socket.send_fds(sock, [proto.encode(job)], fds)
            return pid
        except OSError:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            if attempt:
                raise
        finally:
            sock.close()
    raise AssertionError("unreachable")


def _wait_for(pid: int, wait_s: float) -> int | None:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.0005)


def _kill_all_but_me(child: int | None) -> None:
    """SIGKILL every process of the check. None of them runs another instruction after
    this; reaping them (`_reap_all`) waits for the kernel to tear them down."""
    try:
        if _IN_SANDBOX:
            os.kill(-1, signal.SIGKILL)  # every process we may signal, except PID 1 (us)
        elif child:
            os.killpg(child, signal.SIGKILL)  # unsafe mode: never kill(-1) on a host
    except ProcessLookupError:
        pass


def _reap_all() -> None:
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _remove_tree(root: str) -> None:
    """Unsafe mode only: delete a check's directory whatever it left there. Iterative (a
    check may nest thousands of directories), never follows a symlink, makes each
    directory writable before emptying it, and never raises."""
    stack, seen = [root], set()
    while stack:
        path = stack[-1]
        if path in seen:  # its subdirectories are gone or cannot be removed
            stack.pop()
            try:
                os.rmdir(path)
            except OSError:
                pass
            continue
        seen.add(path)
        try:
            os.chmod(path, 0o700)  # a real directory: scandir below never follows links
            with os.scandir(path) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    else:
                        try:
                            os.unlink(entry.path)
                        except OSError:
                            pass
        except OSError:
            pass


def _own_pid_namespace() -> int | None:
    """An fd of our PID namespace if we may return to it after making a new one for a
    child (root), else None (use a warden per check). Tried in a throw-away child: a
    failed attempt would leave our own next children in a namespace of their own."""
    own = os.open("/proc/self/ns/pid", os.O_RDONLY)
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            fresh.next_child_in_new_pid_namespace()
            fresh.children_in_own_pid_namespace(own)
            status = 0
        finally:
            os._exit(status)
    if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0:
        return own
    os.close(own)
    return None


def _self_test(proto, confine, host, config: dict, own_pid_ns: int | None) -> None:
    """Prepare one check's process at start-up and let it go. If the kernel refuses
    anything, stop here (the verifier reports a sandbox error) rather than fail every
    check as the candidate's: a check's process that cannot start has no one to tell."""
    pid, sock = _prepare(proto, confine, host, config, own_pid_ns)
    sock.close()  # no job: it exits 0 once ready
    if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0:
        raise SystemExit("zygote: cannot create a check's namespaces")


def _start(proto, confine, host, job: dict, fds: list, config: dict, state: dict) -> int:
    if _IN_SANDBOX:
        return _hand_over(proto, confine, host, job, fds, config, state)
    state["workdir"] = tempfile.mkdtemp(prefix="rlvr-unsafe-")
    child = os.fork()
    if child == 0:
        os.closerange(config["fd"], config["fd"] + 1)  # the control socket
        _child(proto, confine, host, job, fds, state["workdir"])
    return child


def _preload(names: list) -> int:
    """Import the configured packages here, once, so that every later check's process
    (a fork of this one) finds them loaded. Returns the address space they took, in
    MB: each check's RLIMIT_AS is raised by as much, so that the model's code keeps
    the memory_mb it was promised. What a check does to these modules stays in its own
    copy of this process's memory (fork), so no check sees another's changes.
    Called at start ("start") or, with "auto", after the first check whose program
    names a package (between checks: reaped, not yet prepared), so that workloads
    that never use them do not pay the larger fork."""
    import importlib

    def size_mb() -> int:
        with open("/proc/self/status") as status:
            line = next(l for l in status if l.startswith("VmSize:"))
        return int(line.split()[1]) // 1024

    before = size_mb()
    for name in names:
        importlib.import_module(name)  # a failure stops the zygote: a sandbox error
    return max(0, size_mb() - before)


def _handle(proto, confine, host, job: dict, fds: list, config: dict, state: dict) -> list:
    if job.get("op") == "run" and len(fds) in (1, 3) and state["child"] is None:
        if job.get("wants_packages") and not state["preloaded"]:
            state["preload_pending"] = True  # done once this check is reaped
        limits = job["limits"]
        job = {**job, "limits": {**limits, "memory_mb": limits["memory_mb"] + state["preloaded_mb"]}}
        state["child"] = _start(proto, confine, host, job, fds, config, state)
        return ["started"]
    if job.get("op") == "reap":
        child, state["child"] = state["child"], None
        code = _wait_for(child, float(job.get("wait_s", 0))) if child else None
        _kill_all_but_me(child)
        state["killed"] = True  # reaped by `_after_reply`, before any other request
        if not _IN_SANDBOX:  # trusted code, on the host: finish before answering
            _after_reply(proto, confine, host, config, state)
        return ["clean", code]
    return ["refused"]


def _after_reply(proto, confine, host, config: dict, state: dict) -> None:
    """The rest of a clean-up, done while the verifier reads the verdict: wait until the
    kernel has torn the check down (its namespaces, /tmp, every process: only then may
    the next check start, or its processes would count against its RLIMIT_NPROC), then
    prepare the next check's warden."""
    if state.pop("killed", False):
        _reap_all()
        ready = state.pop("ready", None)  # killed too, if there was one
        if ready:
            ready[1].close()
        if state["workdir"]:
            _remove_tree(state["workdir"])
            state["workdir"] = None
        if state.pop("preload_pending", False):
            state["preloaded"] = True  # once, even if it fails: checks then import
            try:                       # it themselves, and say why it failed
                state["preloaded_mb"] = _preload(config["preload"])
            except Exception:
                pass
    if _IN_SANDBOX and state["child"] is None and "ready" not in state:
        try:
            state["ready"] = _prepare(proto, confine, host, config, state["own_pid_ns"])
        except OSError:
            pass  # _hand_over makes one when the check comes


def main(proto, confine, config: dict) -> None:
    global _IN_SANDBOX
    import candidate_host as host  # imported before any fork: children pay nothing
    # PID 1 means bubblewrap's fresh namespace; anything else is the unsafe mode on a
    # host, where kill(-1) and namespaces are not ours to use.
    _IN_SANDBOX = os.getpid() == 1
    confine.non_dumpable()
    state = {"child": None, "workdir": None, "own_pid_ns": None}
    if _IN_SANDBOX:
        state["own_pid_ns"] = _own_pid_namespace()
        _self_test(proto, confine, host, config, state["own_pid_ns"])
    confine.preload_common_modules()
    at_start = config.get("preload_at_start", False)
    state["preloaded_mb"] = _preload(config["preload"]) if at_start else 0
    state["preloaded"] = at_start or not config["preload"]
    control = socket.socket(fileno=config["fd"])
    while True:
        message, fds, _, _ = socket.recv_fds(control, 1 << 16, 3)
        if not message:
            break
        try:
            reply = _handle(proto, confine, host, proto.decode(message[4:]), fds, config, state)
        except Exception as exc:  # never die of a check: say so, and be replaced
            reply = ["failed", f"{type(exc).__name__}: {str(exc)[:200]}"]
        for fd in fds:
            os.close(fd)
        control.sendall(proto.encode(reply))
        _after_reply(proto, confine, host, config, state)
    if state["workdir"]:
        _remove_tree(state["workdir"])
