"""The warm candidate sandbox: one long-lived bubblewrap sandbox per verifier process
that forks a fresh, confined child for each check.

Starting bwrap and an interpreter costs tens of milliseconds; a fork of this small,
already-started process costs about one. What the fresh sandbox per check gave, the
zygote restores explicitly after every check:
- it is PID 1 of the sandbox's PID namespace, which the kernel never lets a process
  inside signal with SIGKILL; and non-dumpable, so no process inside can ptrace it or
  read its memory or descriptors through /proc;
- each check's child closes the control socket before anything untrusted runs, then
  confines itself (rlimits, no-new-privs, seccomp; as root also a uid of its own, so
  the children of different checks cannot even signal one another);
- after the check ("reap"), it kills every other process in the namespace with
  kill(-1, SIGKILL) - atomic with respect to fork - reaps them all, including daemons
  that double-forked, and empties /tmp. Only then does the next check start.

Control messages (SOCK_SEQPACKET, one frame per message):
  {"op": "run", "mode", "limits", "drop_uid"} + fds [channel] (serve mode) or
      [program, stdin, stdout] (io mode) -> ["started"]
  {"op": "reap", "wait_s"} -> ["clean", exit code of the check's process or None]
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import tempfile
import time

_TMP = "/tmp"
_IN_SANDBOX = False


def _child(proto, confine, host, job: dict, fds: list, control: socket.socket,
           workdir: str) -> None:
    control.close()
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
    try:
        if _IN_SANDBOX:
            os.kill(-1, signal.SIGKILL)  # every process we may signal, except PID 1 (us)
        elif child:
            os.killpg(child, signal.SIGKILL)  # unsafe mode: never kill(-1) on a host
    except ProcessLookupError:
        pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _empty(directory: str) -> None:
    for dirpath, dirnames, _ in os.walk(directory):
        for name in dirnames:  # a check may have left dirs we could not enter
            try:
                os.chmod(os.path.join(dirpath, name), 0o700, follow_symlinks=False)
            except OSError:
                pass
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def main(proto, confine, config: dict) -> None:
    global _IN_SANDBOX
    import candidate_host as host  # imported before any fork: children pay nothing
    # PID 1 means bubblewrap's fresh namespace; anything else is the unsafe mode on a
    # host, where kill(-1) and emptying /tmp would hit everything else of this user.
    _IN_SANDBOX = os.getpid() == 1
    confine.non_dumpable()
    confine.preload_common_modules()
    workdir = _TMP if _IN_SANDBOX else tempfile.mkdtemp(prefix="rlvr-unsafe-")
    control = socket.socket(fileno=config["fd"])
    child = None
    while True:
        message, fds, _, _ = socket.recv_fds(control, 1 << 16, 3)
        if not message:
            break
        job = proto.decode(message[4:])
        if job.get("op") == "run" and len(fds) in (1, 3) and child is None:
            child = os.fork()
            if child == 0:
                _child(proto, confine, host, job, fds, control, workdir)
            reply = ["started"]
        elif job.get("op") == "reap":
            code = _wait_for(child, float(job.get("wait_s", 0))) if child else None
            _kill_all_but_me(child)
            _empty(workdir)
            child = None
            reply = ["clean", code]
        else:
            reply = ["refused"]
        for fd in fds:
            os.close(fd)
        control.sendall(proto.encode(reply))
    if not _IN_SANDBOX:
        shutil.rmtree(workdir, ignore_errors=True)
