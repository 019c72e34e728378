"""Packages in the code sandbox (issue 21): numpy (by default) is importable read-only,
nothing else of the host's site-packages is, and numpy opens no hole: its ctypes
bridge still meets the seccomp filter, its memmap and file readers still meet the
read-only mounts, and its URL reader still meets the closed network.

The attacks are self-revealing, as in test_code_hacks.py: the function answers right
only if the escape worked, so a leak fails the test instead of passing by accident.
"""

from __future__ import annotations

import hashlib
import http.server
import importlib.util
import platform
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import numpy
import pytest

from code_containment import assert_zero, leftover_processes, verifier, wall  # noqa: F401
from rlvr.verifiers.code import CodeVerifier
from rlvr.verifiers.code.packages import PackageError, resolve

SQUARE = {"test": "def check(candidate):\n    assert candidate(3) == 9\n"
                  "    assert candidate(-2) == 4\n", "entry_point": "square", "timeout": 4}
MEAN = {"prompt": "import numpy as np\n",
        "test": "def check(candidate):\n    assert candidate([1, 2, 3]) == 2.0\n"
                "    assert candidate([4.0]) == 4.0\n", "entry_point": "mean", "timeout": 4}
NUMPY_MEAN = "def mean(xs):\n    return np.mean(np.array(xs))\n"  # returns np.float64


# --- what is importable --------------------------------------------------------------

def test_a_correct_numpy_solution_scores_one_and_a_wrong_one_zero(verifier):
    assert verifier.verify(NUMPY_MEAN, MEAN).passed
    assert_zero(verifier.verify("def mean(xs):\n    return np.median(np.array(xs) * 2)\n", MEAN))
    # arrays and numpy scalars inside containers answer as the plain values they hold
    pairs = {"asserts": ["assert pairs(3) == [[0, 0], [1, 1], [2, 2]]",
                         "assert stats([1, 3]) == (2.0, 4)"]}
    code = ("import numpy as np\ndef pairs(n):\n    return np.stack([np.arange(n)] * 2, 1)\n"
            "def stats(xs):\n    a = np.array(xs)\n    return (a.mean(), a.sum())\n")
    assert verifier.verify(code, pairs).passed


def test_numpy_in_an_io_program_and_in_test_code(verifier):
    io = {"io": [{"input": "1 2 3 4\n", "output": "10\n"}, {"input": "5\n", "output": "5\n"}]}
    program = ("import sys, numpy as np\n"
               "print(int(np.fromstring(sys.stdin.read(), sep=' ', dtype=np.int64).sum()))\n")
    assert verifier.verify(program, io).passed
    # trusted test code may use numpy too (the judge's sandbox sees the same packages)
    close = {"test": "import numpy as np\ndef check(candidate):\n"
                     "    assert np.allclose(candidate(2), [1.0, 0.5])\n", "entry_point": "inv"}
    assert verifier.verify("def inv(n):\n    return [1 / (i + 1) for i in range(n)]\n", close).passed


def test_only_the_listed_packages_are_visible(verifier):
    listing = {"asserts": ["assert visible() == ['numpy', 'numpy.libs']"]}
    code = "import os\ndef visible():\n    return sorted(os.listdir('/packages'))\n"
    assert verifier.verify(code, listing).passed
    assert [b.name for b in resolve(("numpy",))] == ["numpy", "numpy.libs"]


@pytest.mark.parametrize("module", ["torch", "rlvr", "pytest", "httpx"])
def test_an_unlisted_package_fails_with_a_clear_reason(verifier, module):
    assert importlib.util.find_spec(module) is not None, f"{module} is not on the host"
    verdict = verifier.verify(f"import {module}\ndef square(x):\n    return x * x\n", SQUARE)
    assert_zero(verdict)
    assert verdict.reason == "load_error"
    assert f"No module named '{module}'" in verdict.details["error"]
    assert verdict.details["importable"] == ["the standard library", "numpy"]
    # imported inside the call instead: the failing call's error says the same
    inside = verifier.verify(f"def square(x):\n    import {module}\n    return x * x\n", SQUARE)
    assert_zero(inside)
    assert "ModuleNotFoundError" in inside.details["errors"][0]
    assert "importable" in inside.details


def test_an_empty_list_means_the_standard_library_only():
    bare = CodeVerifier(packages=[])
    try:
        verdict = bare.verify("import numpy as np\n" + NUMPY_MEAN, SQUARE)
        assert verdict.reason == "load_error" and "numpy" in verdict.details["error"]
        assert verdict.details["importable"] == ["the standard library"]
        assert bare.verify("def square(x):\n    return x * x\n", SQUARE).passed
    finally:
        bare.close()


def test_a_missing_package_is_an_error_when_configured():
    with pytest.raises(PackageError, match="'no-such-package-rlvr'.* not installed"):
        CodeVerifier(packages=["numpy", "no-such-package-rlvr"])
    for bad in ("numpy", [1], ["numpy; rm -rf /"], [" numpy"]):
        with pytest.raises(PackageError, match="option 'packages'"):
            CodeVerifier(packages=bad)
    for bad in (True, "always", None):
        with pytest.raises(ValueError, match="option 'preload_packages'"):
            CodeVerifier.check_options({"preload_packages": bad})


def test_the_unsafe_mode_imports_the_listed_packages_from_the_host():
    unsafe = CodeVerifier(sandbox="none-unsafe")
    try:
        assert unsafe.verify(NUMPY_MEAN, MEAN).passed
        # the host's environment is kept there, but not its thread counts
        assert unsafe.verify(ONE_THREAD, SQUARE).passed
    finally:
        unsafe.close()


def test_a_missing_package_names_itself_in_the_verdict_through_the_pool():
    from rlvr.verifiers.pool import Case, VerifierPool

    case = Case("code", NUMPY_MEAN, MEAN, {"packages": ["no-such-package-rlvr"]})
    with VerifierPool(workers=1) as pool:
        verdict = pool.verify([case])[0]
    assert verdict.score == 0.0 and verdict.reason == "error"
    assert "no-such-package-rlvr" in str(verdict.details) and "not installed" in str(verdict.details)


def test_numerical_thread_pools_keep_to_one_thread(verifier):
    """OpenBLAS would start a thread per host core at import; the sandbox allows 8
    processes and threads in all, and sizes its CPU limit for one."""
    assert verifier.verify(ONE_THREAD, SQUARE).passed


ONE_THREAD = ("import os, numpy as np\n"
              "def square(x):\n"
              "    a = np.ones((300, 300))\n    (a @ a).sum()\n"
              "    threads = len(os.listdir('/proc/self/task'))\n"
              "    one = os.environ.get('OPENBLAS_NUM_THREADS') == os.environ.get('OMP_NUM_THREADS') == '1'\n"
              "    return x * x if threads == 1 and one else -threads\n")


# --- no state survives a check, numpy's included --------------------------------------

@pytest.fixture(scope="module")
def lazy(wall):
    """A verifier whose checks import numpy themselves (never preloaded)."""
    v = CodeVerifier(preload_packages="never")
    yield v
    v.close()


@pytest.fixture(scope="module")
def eager(wall):
    """A verifier whose zygote imports numpy at start."""
    v = CodeVerifier(preload_packages="start")
    yield v
    v.close()


def test_when_numpy_is_preloaded(lazy, eager):
    """"auto" (the default) preloads once a program names numpy, "start" at once,
    "never" never: told by whether a check finds numpy loaded before it imports it."""
    probe = {"asserts": ["assert loaded() is EXPECTED"]}
    stdlib = "import sys\nLOADED = 'num' + 'py' in sys.modules\ndef loaded():\n    return LOADED\n"
    uses = stdlib + "import numpy\n"
    auto = CodeVerifier()
    try:
        steps = [(auto, stdlib, False), (auto, stdlib, False), (auto, uses, False),
                 (auto, stdlib, True), (auto, uses, True), (eager, stdlib, True),
                 (lazy, uses, False), (lazy, uses, False)]
        for v, code, expected in steps:
            ref = {**probe, "setup": f"EXPECTED = {expected}"}
            assert v.verify(code, ref).passed, (code, expected)
    finally:
        auto.close()


@pytest.mark.parametrize("mode", ["preloaded", "imported_per_check"])
def test_numpy_state_does_not_carry_across_checks(eager, lazy, mode):
    """Each check changes numpy's module state (an attribute, print options, the global
    random state, a patched function) and reports what it found: the next check must
    find numpy as a fresh import leaves it, whether the zygote preloaded numpy (each
    check a fork of it) or each check imports it."""
    verifier = eager if mode == "preloaded" else lazy
    probe = {"asserts": ["assert seen() == (None, 8, False, 6.0)"]}
    code = ("import numpy as np\n"
            "def seen():\n"
            "    found = (getattr(np, 'rlvr_mark', None), np.get_printoptions()['precision'],\n"
            "             hasattr(np.sum, 'patched'), float(np.sum([1, 2, 3])))\n"
            "    np.rlvr_mark = 1\n    np.set_printoptions(precision=2)\n    np.random.seed(7)\n"
            "    patched = lambda *a, **k: 0\n    patched.patched = True\n    np.sum = patched\n"
            "    return found\n")
    assert all(verifier.verify(code, probe).passed for _ in range(4))


def test_preloading_keeps_the_memory_promised(eager, lazy):
    """The zygote's numpy takes ~80 MB of address space, which each check inherits:
    its RLIMIT_AS is raised by as much, so memory_mb is still what the model's code may
    allocate - and no more."""
    grab = "def grab(n):\n    return len(bytearray(n * 1024 * 1024)) // (1024 * 1024)\n"
    fits = {"asserts": ["assert grab(90) == 90"], "memory_mb": 128}
    too_much = {"asserts": ["assert grab(200) == 200"], "memory_mb": 128}
    for v in (eager, lazy):
        assert v.verify(grab, fits).passed
        assert_zero(v.verify(grab, too_much))
    # numpy itself within a small limit: only preloaded does it fit in 64 MB
    small = {**MEAN, "memory_mb": 64}
    assert eager.verify(NUMPY_MEAN, small).passed
    # and a check with a smaller limit leaves the next one its own (the memory cgroup's
    # limit goes down, then up again)
    assert eager.verify(NUMPY_MEAN, MEAN).passed
    assert lazy.verify(NUMPY_MEAN, MEAN).passed


# --- numpy as a tool for escapes --------------------------------------------------------
# Each attack is built by a function, so that the same code can be shown to work where
# nothing stops it (`_on_the_host`: a plain interpreter, no sandbox, no seccomp, with
# harmless targets): its 0 in the sandbox is then the sandbox's doing.

# libc as numpy.ctypeslib loads it, from wherever this interpreter mapped it
LOAD_LIBC = ("import ctypes, os, numpy as np\n"
             "LIBC = next(line.split()[-1] for line in open('/proc/self/maps')\n"
             "            if '/libc.so' in line or '/libc-' in line)\n"
             "libc = np.ctypeslib.load_library(os.path.basename(LIBC), os.path.dirname(LIBC))\n")
SYSCALLS = {  # x86_64 numbers: what each would leave behind is in confine.py
    "socket_inet": "libc.syscall(41, 2, 1, 0) >= 0",
    "socket_inet6_udp": "libc.syscall(41, 10, 2, 0) >= 0",
    "libc_socket": "libc.socket(2, 1, 0) >= 0",
    "unshare_newuser": "libc.syscall(272, 0x10000000) == 0",
    "memfd_create": "libc.syscall(319, b'x', 0) >= 0",
    "shmget": "libc.syscall(29, 0x5EED, 1 << 20, 0o1600) >= 0",
    "add_key": "libc.syscall(248, b'user', b'k', b'v', 1, -4) >= 0",
    "io_uring_setup": "libc.syscall(425, 8, ctypes.create_string_buffer(120)) >= 0",
    "ptrace_attach_1": "libc.syscall(101, 16, 1, 0, 0) == 0",  # the check itself is 1
    "ptrace_attach_2": "libc.syscall(101, 16, 2, 0, 0) == 0",
}


def _syscall_attack(names: list[str]) -> str:
    probes = ", ".join(SYSCALLS[name] for name in names)
    return LOAD_LIBC + f"GOT = [{probes}]\ndef square(x):\n    return x * x if any(GOT) else None\n"


def _memmap_attack(targets: list[str], own_file: str) -> str:
    return (f"import numpy as np\nTARGETS, OWN = {targets!r}, {own_file!r}\n"
            "def square(x):\n"
            "    wrote = 0\n"
            "    for path in TARGETS:\n"
            "        try:\n"
            "            m = np.memmap(path, dtype='uint8', mode='w+', shape=(16,))\n"
            "            m[:] = 65\n            m.flush()\n            wrote += 1\n"
            "        except (OSError, ValueError):\n            pass\n"
            "        try:\n            np.arange(4).tofile(path + '.bin')\n            wrote += 1\n"
            "        except OSError:\n            pass\n"
            "    try:  # an installed file, opened for writing (the same byte written back)\n"
            "        m = np.memmap(OWN, dtype='uint8', mode='r+')\n"
            "        m[0] = m[0]\n        m.flush()\n        wrote += 1\n"
            "    except (OSError, ValueError):\n        pass\n"
            "    return x * x if wrote else None\n")


def _read_attack(npy: str, raw: str, unlisted: str) -> str:
    return (f"import numpy as np\nNPY, RAW, UNLISTED = {npy!r}, {raw!r}, {unlisted!r}\n"
            "def square(x):\n"
            "    for read in (lambda: np.load(NPY), lambda: np.fromfile(RAW, dtype=np.int64)):\n"
            "        try:\n"
            "            data = read()\n"
            "            return int(data[0]) if x == 3 else int(data[1])\n"
            "        except Exception:\n"
            "            pass\n"
            "    try:  # a file of a host package that is not listed\n"
            "        np.fromfile(UNLISTED, dtype=np.uint8)\n"
            "        return x * x\n"
            "    except Exception:\n"
            "        return None\n")


def _network_attack(url: str) -> str:
    return ("import numpy as np\n"
            f"URL = {url!r}\n"
            "def square(x):\n"
            "    for fetch in (lambda: np.lib.npyio.DataSource(None).open(URL).read(),\n"
            "                  lambda: np.loadtxt(URL, dtype=int)):\n"
            "        try:\n"
            "            answers = [int(v) for v in str(fetch()).replace('[', ' ').replace(']', ' ').split()]\n"
            "            return answers[0] if x == 3 else answers[1]\n"
            "        except Exception:\n"
            "            pass\n"
            "    return None\n")


def _on_the_host(code: str, timeout_s: float = 30) -> str:
    """square(3) of `code` run by a plain interpreter (no sandbox, no seccomp)."""
    done = subprocess.run([sys.executable, "-c", code + "\nprint(square(3))"],
                          capture_output=True, text=True, timeout=timeout_s)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86_64 syscall numbers")
def test_ctypes_through_numpy_still_meets_seccomp(verifier):
    """libc loaded through numpy.ctypeslib: IP sockets, new user namespaces, memfd,
    SysV memory, keyrings and io_uring are refused by raw syscall as by libc's
    wrappers; ptrace finds no process but the check's own."""
    assert_zero(verifier.verify(_syscall_attack(list(SYSCALLS)), SQUARE))
    # live where no filter is: a socket (nothing that outlives the process)
    assert _on_the_host(_syscall_attack(["socket_inet", "libc_socket"])) == "9"


def test_a_fork_bomb_through_numpy_ctypes_is_bounded(verifier):
    code = (LOAD_LIBC + "def square(x):\n"
            "    for _ in range(10000):\n"
            "        libc.fork()\n"
            "    return None\n")
    assert_zero(verifier.verify(code, SQUARE))
    assert leftover_processes(verifier) == []
    assert verifier.verify("def square(x):\n    return x * x\n", SQUARE).passed


def test_numpy_memmap_cannot_write_outside_tmp(verifier, tmp_path):
    tmp_path.chmod(0o777)
    marker = f"rlvr-memmap-{uuid.uuid4().hex}"
    init = Path(numpy.__file__)
    before = hashlib.sha256(init.read_bytes()).hexdigest()
    targets = [str(tmp_path / marker), f"/packages/{marker}", f"/packages/numpy/{marker}",
               f"/rlvr/{marker}", f"/usr/{marker}", f"/{marker}", f"/dev/shm/{marker}"]
    assert_zero(verifier.verify(_memmap_attack(targets, "/packages/numpy/__init__.py"), SQUARE))
    for path in targets + [t + ".bin" for t in targets]:
        assert not Path(path).exists(), f"{path} appeared on the host"
    assert not (init.parent / marker).exists()
    assert hashlib.sha256(init.read_bytes()).hexdigest() == before
    assert verifier.verify(NUMPY_MEAN, MEAN).passed  # numpy itself is intact
    # live where nothing stops it (a target in the test's own directory only)
    own = tmp_path / "own.py"
    own.write_text("# a file the attack may open\n")
    assert _on_the_host(_memmap_attack([str(tmp_path / "live")], str(own))) == "9"


def test_numpy_cannot_read_host_files(verifier, tmp_path):
    tmp_path.chmod(0o755)
    answers = tmp_path / "answers.npy"
    numpy.save(answers, numpy.array([9, 4]))
    raw = tmp_path / "answers.bin"
    numpy.array([9, 4], dtype=numpy.int64).tofile(raw)
    for path in (answers, raw):
        path.chmod(0o644)
    unlisted = importlib.util.find_spec("torch").origin
    code = _read_attack(str(answers), str(raw), unlisted)
    assert_zero(verifier.verify(code, SQUARE))
    assert _on_the_host(code) == "9"
    assert _on_the_host(_read_attack("/nonexistent", "/nonexistent", unlisted)) == "9"


class _Answers(http.server.BaseHTTPRequestHandler):
    requests: list[str] = []

    def do_GET(self) -> None:
        type(self).requests.append(self.path)
        body = b"9 4\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def test_numpy_cannot_reach_the_network(verifier):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/answers.txt"
    try:
        assert_zero(verifier.verify(_network_attack(url), SQUARE))
        assert _Answers.requests == []  # nobody ever asked
        assert _on_the_host(_network_attack(url)) == "9"
        assert _Answers.requests, "the attack never reached the server on the host"
    finally:
        server.shutdown()
        server.server_close()


def test_the_trainer_refuses_a_missing_package_when_its_config_loads():
    from rlvr.config import ConfigError
    from rlvr.training.config import RewardConfig

    with pytest.raises(ConfigError, match=r"options: .*'no-such-package-rlvr'.* not installed"):
        RewardConfig(verifier="code", options={"packages": ["no-such-package-rlvr"]}).validate()
    RewardConfig(verifier="code", options={"packages": ["numpy"]}).validate()
    RewardConfig(verifier="code").validate()
    # remote servers have their own installs: their verdicts name what they lack
    RewardConfig(verifier="code", options={"packages": ["no-such-package-rlvr"]},
                 backend="remote", remote_urls=["http://127.0.0.1:9"]).validate()
