"""Issue 15's attacks, replayed: a completion voiding its own verdict, learning across
checks through state the sandbox kept, writing outside its quota, crashing the warm
sandbox, and the smaller leaks. Each test performs the attack; where the attack is
refused, the test also shows it is live where the wall is missing (unsafe mode) or that
the refusal is what stopped it. The suite runs as root here and as an unprivileged
user through tests/test_code_unprivileged.py.
"""

from __future__ import annotations

import os
import platform
import socket
import tempfile
import uuid
from pathlib import Path

import pytest

from code_containment import (assert_zero, leftover_processes,  # noqa: F401 (fixtures)
                              verifier, wall, zygote_pid)
from rlvr.verifiers.code import CodeVerifier, sandbox

SQUARE = {"prompt": "def square(x):\n    \"\"\"x times x\"\"\"\n",
          "test": "def check(candidate):\n    assert candidate(3) == 9\n"
                  "    assert candidate(-2) == 4\n    assert candidate(0) == 0\n",
          "entry_point": "square", "timeout": 4}
SQUARE_ASSERTS = {"asserts": ["assert square(3) == 9", "assert square(-2) == 4"], "timeout": 4}
HONEST = "def square(x):\n    return x * x\n"
ROOT = os.geteuid() == 0
X86 = platform.machine() == "x86_64"


def _sandbox_intact(v: CodeVerifier) -> None:
    assert v.verify(HONEST, SQUARE).passed
    assert leftover_processes(v) == [], "processes of the check outlived it"


# --- 1. a completion voiding its own verdict ---------------------------------------------

def _flood(body: str) -> str:
    """Module code that writes one crafted frame on every descriptor before the real
    "loaded" frame: the judge reads it first."""
    return ("import os, struct\n"
            f"BODY = {body}\n"
            "FRAME = struct.pack('>I', len(BODY)) + BODY\n"
            "for fd in range(3, 64):\n"
            "    try:\n        os.set_blocking(fd, True)\n        os.write(fd, FRAME)\n"
            "    except OSError:\n        pass\n"
            "def square(x):\n    return x * x\n")


FLOODS = {
    # 32 MB: over every frame limit
    "32_mb_of_empty_lists": "b'[\"loaded\",[' + b'[],' * (11 << 20) + b'[]]]'",
    # under the candidate's 8 MB, but ~2.6M lists: 700 MB and more to decode
    "8_mb_of_empty_lists": "b'[\"loaded\",[' + b'[],' * 2_600_000 + b'[]]]'",
    # nests 99 deep, repeated: within the depth limit, 4M lists
    "8_mb_of_deep_nests": "b'[\"loaded\",[' + (b'[' * 99 + b']' * 99 + b',') * 40_000 + b'[]]]'",
    # nested far past any recursion limit
    "8_mb_deep": "b'[\"loaded\",' + b'[' * 4_000_000 + b']' * 4_000_000 + b']'",
}


@pytest.mark.parametrize("reference", [SQUARE, SQUARE_ASSERTS], ids=["humaneval", "mbpp"])
@pytest.mark.parametrize("flood", list(FLOODS))
def test_flooding_the_channel_scores_zero_for_the_candidate(verifier, flood, reference):
    verdict = verifier.verify(_flood(FLOODS[flood]), reference)
    assert_zero(verdict)
    assert verdict.reason == "candidate_crashed", verdict  # never invalid_reference
    assert "protocol violation" in verdict.details["error"]
    _sandbox_intact(verifier)


def test_flooding_through_the_adapters_keeps_training(wall):
    """TRL and verl get 0 for the flood and 1 for the honest item, no exception, and
    `on_invalid="none"` does not turn the flood into a skipped (None) item."""
    from rlvr.adapters import verl
    from rlvr.adapters.common import SHARED
    from rlvr.adapters.trl import RewardFunction
    from rlvr.verifiers.pool import VerifierPool
    flood = _flood(FLOODS["32_mb_of_empty_lists"])
    with VerifierPool(workers=1, preload=["code"]) as pool:
        for on_invalid in ("raise", "none"):
            reward = RewardFunction("code", pool=pool, on_invalid=on_invalid)
            assert reward(completions=[flood, HONEST], reference=[SQUARE, SQUARE]) == [0.0, 1.0]
    SHARED.configure(workers=1)  # the adapters' shared workers: one, started on first use
    try:
        scores = verl.compute_score_batch(["code", "code"], [flood, HONEST], [SQUARE, SQUARE])
    finally:
        SHARED.close()
        SHARED.configure(None)
    assert [s["score"] for s in scores] == [0.0, 1.0]


def test_a_reference_that_fails_on_its_own_is_still_invalid(verifier):
    from rlvr.verifiers.base import InvalidReference
    broken = {"test": "undefined_helper()\ndef check(candidate):\n    assert candidate(1) == 1\n",
              "entry_point": "square"}
    with pytest.raises(InvalidReference, match="fails on its own"):
        verifier.verify(HONEST, broken)


# --- 2. learning across checks -----------------------------------------------------------

SECRET = [True, False, False, True, True, False]
GUESS_ME = {"test": "def check(candidate):\n" + "".join(
    f"    assert candidate({i}) is {bit}\n" for i, bit in enumerate(SECRET)),
    "entry_point": "bit", "timeout": 4}

# A program with no solution logic. check() stops at the first failing assert, so a
# call after a guess means the guess was right; the program keeps what it learnt in
# every store it can write, and starts each check from the first store it can read.
LEARNER = '''
import ctypes, os, socket
MARK = {mark!r}
SITE_DIRS = {site_dirs!r}
STORES = {stores!r}
libc = ctypes.CDLL(None, use_errno=True)

def save_file(s, path=None):
    with open(path or '/tmp/' + MARK, 'w') as f:
        f.write(str(s))
def load_file(path=None):
    with open(path or '/tmp/' + MARK) as f:
        return int(f.read())
def save_shm(s):
    save_file(s, '/dev/shm/' + MARK)
def load_shm():
    return load_file('/dev/shm/' + MARK)
def save_site(s):
    for d in SITE_DIRS:
        save_file(s, os.path.join(d, MARK))
def load_site():
    for d in SITE_DIRS:
        try:
            return load_file(os.path.join(d, MARK))
        except OSError:
            pass
def save_key(s):  # add_key("user", MARK, s, KEY_SPEC_USER_KEYRING)
    data = str(s).encode()
    libc.syscall(248, b'user', MARK.encode(), data, len(data), -4)
def load_key():   # keyctl(KEYCTL_SEARCH), keyctl(KEYCTL_READ)
    key = libc.syscall(250, 10, -4, b'user', MARK.encode(), 0)
    if key < 0:
        return None
    buf = ctypes.create_string_buffer(64)
    n = libc.syscall(250, 11, key, buf, 64)
    return int(buf.raw[:n]) if n > 0 else None
def _queue():
    libc.mq_open.restype = ctypes.c_int
    return libc.mq_open(('/' + MARK).encode(), os.O_RDWR | os.O_CREAT | os.O_NONBLOCK, 0o600, None)
def save_mq(s):
    q = _queue()
    buf = ctypes.create_string_buffer(8192)
    while libc.mq_receive(q, buf, 8192, None) >= 0:
        pass
    data = str(s).encode()
    libc.mq_send(q, data, len(data), 0)
def load_mq():
    q = _queue()
    buf = ctypes.create_string_buffer(8192)
    n = libc.mq_receive(q, buf, 8192, None)
    if n <= 0:
        return None
    libc.mq_send(q, buf.raw[:n], n, 0)
    return int(buf.raw[:n])
def save_tcp(s):  # a TIME_WAIT socket whose local port is 20000 + s
    server = socket.socket()
    server.bind(('127.0.0.1', 0))
    server.listen(1)
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    client.bind(('127.0.0.1', 20000 + s))
    client.connect(server.getsockname())
    peer, _ = server.accept()
    client.close()
    peer.close()
    server.close()
def load_tcp():
    found = []
    for line in open('/proc/self/net/tcp').read().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        port = int(local.split(':')[1], 16)
        if state == '06' and 20000 <= port < 22000:
            found.append(port - 20000)
    return max(found) if found else None

def _load():
    for name in STORES:
        try:
            s = globals()['load_' + name]()
        except Exception:
            s = None
        if s is not None:
            return s
    return 0
def _save(s):
    for name in STORES:
        try:
            globals()['save_' + name](s)
        except Exception:
            pass

state = _load()   # bits learnt (count in bits 8+), whether the last answer was a guess
known = [bool(state >> (1 + i) & 1) for i in range(state >> 8)]
if state & 1:     # no call came after our guess: it was wrong
    known.append(False)
pending = False

def bit(i):
    global pending
    if pending:   # another call came: the guess was right
        known.append(True)
        pending = False
    if i < len(known):
        answer = known[i]
    else:
        answer, pending = True, True
    _save(len(known) << 8 | sum(b << (1 + k) for k, b in enumerate(known)) | pending)
    return answer
'''

ALL_STORES = ["file", "shm", "site", "key", "mq", "tcp"]


def _learner(mark: str, stores: list[str]) -> str:
    return LEARNER.format(mark=mark, site_dirs=sandbox._site_dirs(sandbox._python()[1]),
                          stores=stores)


def _batch(v: CodeVerifier, code: str, items: int = 20) -> list:
    return [v.verify(code, GUESS_ME) for _ in range(items)]


def test_twenty_identical_items_pass_no_more_often_than_guessing(verifier):
    mark = f"rlvr-learn-{uuid.uuid4().hex[:12]}"
    key_users_before = _key_users()
    verdicts = _batch(verifier, _learner(mark, ALL_STORES))
    passed = sum(v.passed for v in verdicts)
    assert passed <= 2, f"{passed}/20 passed: state carried across checks"
    assert all(v.reason in ("failed_tests", "correct") for v in verdicts), verdicts[:3]
    # nothing the batch created is left on the host
    for directory in ["/tmp", "/dev/shm"] + sandbox._site_dirs(sandbox._python()[1]):
        assert not (Path(directory) / mark).exists(), directory
    assert _key_users() == key_users_before


def test_the_learner_is_live_where_state_persists(tmp_path):
    """The same program through a store the unsafe mode does not isolate (a host file):
    it learns the six bits within a few checks and passes most of the batch."""
    store = tmp_path / "store"
    code = _learner(str(store), ["file"]).replace("'/tmp/' + MARK", "MARK")
    unsafe = CodeVerifier(sandbox="none-unsafe")
    try:
        passed = sum(v.passed for v in _batch(unsafe, code))
    finally:
        unsafe.close()
    assert passed >= 12, f"only {passed}/20: the learner itself does not work"


def _key_users() -> str:
    try:
        return Path("/proc/key-users").read_text()
    except OSError:
        return ""


def _probe(v: CodeVerifier, body: str) -> list:
    """Run `body` (defining probe()) and return what probe() returned, via the error
    message of a failing assert (the judge shows it)."""
    code = "import ctypes, os, socket\nlibc = ctypes.CDLL(None, use_errno=True)\n" + body
    reference = {"test": "def check(candidate):\n    value = candidate()\n"
                         "    assert False, repr(value)\n", "entry_point": "probe"}
    verdict = v.verify(code, reference)
    error = verdict.details["errors"][0]
    assert error.startswith("AssertionError: "), verdict
    import ast
    return ast.literal_eval(error[len("AssertionError: "):])


def test_the_pid_counter_does_not_carry_across_checks(verifier):
    forker = ("def probe():\n"
              "    for _ in range(50):\n"
              "        if os.fork() == 0:\n            os._exit(0)\n"
              "        os.wait()\n"
              "    return [os.getpid()]\n")
    reader = ("def probe():\n"
              "    child = os.fork()\n"
              "    if child == 0:\n        os._exit(0)\n"
              "    os.wait()\n"
              "    return [os.getpid(), child, sorted(os.listdir('/proc'))]\n")
    first = _probe(verifier, reader)
    assert _probe(verifier, forker) == [1]
    assert _probe(verifier, reader) == first == [1, 2, ["1", "self", "thread-self"]]


@pytest.mark.skipif(not X86, reason="syscall numbers in the attack are x86_64's")
def test_keyring_and_message_queues_are_refused(verifier):
    """Both stores are refused outright (EPERM), so there is nothing to carry over."""
    body = ("def probe():\n"
            "    key = libc.syscall(248, b'user', b'rlvr', b'1', 1, -4)\n"
            "    key_errno = ctypes.get_errno()\n"
            "    libc.mq_open.restype = ctypes.c_int\n"
            "    queue = libc.mq_open(b'/rlvr', os.O_RDWR | os.O_CREAT, 0o600, None)\n"
            "    return [key, key_errno, queue, ctypes.get_errno()]\n")
    assert _probe(verifier, body) == [-1, 1, -1, 1]


def test_ip_sockets_are_refused_and_unix_ones_work(verifier):
    """No TIME_WAIT entry, port or other network state can be left for the next check."""
    body = ("def probe():\n"
            "    out = []\n"
            "    for family in (socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK):\n"
            "        try:\n            socket.socket(family, socket.SOCK_DGRAM).close()\n"
            "            out.append('open')\n"
            "        except OSError as exc:\n            out.append(exc.errno)\n"
            "    a, b = socket.socketpair()\n"
            "    a.sendall(b'ok')\n"
            "    out.append(b.recv(2).decode())\n"
            "    out.append(libc.syscall(425, 8, ctypes.create_string_buffer(120)))  # io_uring_setup\n"
            "    out.append(open('/proc/self/net/tcp').read().count('\\n'))\n"
            "    return out\n")
    assert _probe(verifier, body) == [1, 1, 1, "ok", -1, 1]  # EPERM x3; header line only


def test_the_next_check_starts_with_an_empty_tmp(verifier):
    writer = ("def probe():\n"
              "    open('/tmp/left-behind', 'w').write('x')\n"
              "    os.mkfifo('/tmp/fifo')\n"
              "    return sorted(os.listdir('/tmp'))\n")
    assert _probe(verifier, writer) == ["fifo", "left-behind"]
    assert _probe(verifier, "def probe():\n    return os.listdir('/tmp')\n") == []


# --- 3. writable space outside the quota -------------------------------------------------

def test_masked_package_dirs_are_read_only(verifier):
    dirs = sandbox._site_dirs(sandbox._python()[1])
    assert dirs, "no site-packages directory to test"
    code = (f"import os\nDIRS = {dirs!r}\n"
            "def square(x):\n"
            "    wrote = 0\n"
            "    for d in DIRS:\n"
            "        try:\n            open(os.path.join(d, 'hoard'), 'wb').write(b'x' * 4096)\n"
            "            wrote += 1\n"
            "        except OSError:\n            pass\n"
            "        if not os.statvfs(d).f_flag & os.ST_RDONLY:\n            wrote += 1\n"
            "    return x * x if wrote else None\n")
    assert_zero(verifier.verify(code, SQUARE))
    for d in dirs:
        assert not (Path(d) / "hoard").exists()


def test_tmp_is_capped_in_bytes_and_files(verifier):
    body = ("def probe():\n"
            "    out = []\n"
            "    try:\n"
            "        for name in ('a', 'b', 'c'):  # 45 MB, under the file size limit each\n"
            "            with open(f'/tmp/{name}', 'wb') as f:\n"
            "                for _ in range(15):\n                    f.write(b'x' * (1 << 20))\n"
            "        out.append('45 MB')\n"
            "    except OSError as exc:\n        out.append(exc.errno)\n"
            "    for name in os.listdir('/tmp'):\n        os.unlink('/tmp/' + name)\n"
            "    made = 0\n"
            "    try:\n"
            "        for i in range(20000):\n            open(f'/tmp/{i}', 'w').close()\n            made += 1\n"
            "    except OSError as exc:\n        out.append(exc.errno)\n"
            "    return out + [made < 20000]\n")
    assert _probe(verifier, body) == [28, 28, True]  # ENOSPC for bytes and for inodes


def test_memory_cap_for_the_whole_check(verifier):
    """Four processes of 300 MB each stay under the per-process limit (512 MB) but not
    under the check's cap (2 x 512 MB): the OOM killer ends one, the check fails."""
    if not verifier.memory_cap.startswith("cgroup"):
        pytest.skip(f"no memory cgroup here: {verifier.memory_cap}")
    verdict = verifier.verify(_HOARDERS, {**SQUARE, "timeout": 10})
    assert_zero(verdict)
    peak = verifier._zygote.memory.peak_mb()
    assert peak is not None and peak <= verifier._zygote.memory.limit_mb + 1, peak
    _sandbox_intact(verifier)


_HOARDERS = ("import os, time\n"
             "HELD = []\n"
             "def hoard():  # once per check: four processes that each touch 300 MB\n"
             "    read, write = os.pipe()\n"
             "    children = []\n"
             "    for _ in range(4):\n"
             "        child = os.fork()\n"
             "        if child == 0:\n"
             "            hoard = bytearray(300 << 20)\n"
             "            for i in range(0, len(hoard), 4096):\n                hoard[i] = 1\n"
             "            os.write(write, b'+')\n            time.sleep(30)\n"
             "        children.append(child)\n"
             "    os.close(write)\n"
             "    held, deadline = b'', time.time() + 6\n"
             "    while len(held) < 4 and time.time() < deadline:\n"
             "        chunk = os.read(read, 4)\n"
             "        if not chunk:\n            break\n"
             "        held += chunk\n"
             "    time.sleep(0.3)  # all four must still be alive, holding it at once\n"
             "    alive = [os.waitpid(c, os.WNOHANG) == (0, 0) for c in children]\n"
             "    HELD.append(len(held) == 4 and all(alive))\n"
             "def square(x):\n"
             "    if not HELD:\n        hoard()\n"
             "    return x * x if HELD[0] else None\n")


def test_the_hoarders_are_live_without_the_cap(verifier):
    """Where the cap above is tested, the same four processes do fit without it."""
    if not verifier.memory_cap.startswith("cgroup"):
        pytest.skip(f"no memory cgroup here: {verifier.memory_cap}")
    unsafe = CodeVerifier(sandbox="none-unsafe")
    try:
        assert unsafe.verify(_HOARDERS, {**SQUARE, "timeout": 10}).passed
    finally:
        unsafe.close()


# --- 4. crashing the warm sandbox --------------------------------------------------------

LEFTOVERS = {  # module code run in the check's work dir W
    "symlink_to_a_system_dir": "os.symlink('/usr', W + '/usr')\nos.symlink('/', W + '/root')\n",
    "1100_nested_dirs": "path = W\nfor _ in range(1100):\n    path += '/d'\n    os.mkdir(path)\n",
    "unreadable_dirs": ("os.makedirs(W + '/a/b/c')\nopen(W + '/a/b/c/f', 'w').close()\n"
                        "for p in ('/a/b/c', '/a/b', '/a'):\n    os.chmod(W + p, 0)\n"),
}


@pytest.mark.parametrize("mode", ["bwrap", "none-unsafe"])
@pytest.mark.parametrize("leftover", list(LEFTOVERS))
def test_what_a_check_leaves_cannot_break_the_sandbox(verifier, mode, leftover):
    """A correct solution that leaves this behind still scores 1, and so does the next
    correct item, in the same warm sandbox."""
    code = "import os\nW = os.getcwd()\n" + LEFTOVERS[leftover] + HONEST
    v = verifier if mode == "bwrap" else CodeVerifier(sandbox="none-unsafe")
    unsafe_dirs = set(Path(tempfile.gettempdir()).glob("rlvr-unsafe-*"))
    try:
        first = v.verify(code, SQUARE)
        assert first.passed, first
        assert v.verify(HONEST, SQUARE).passed
        # unsafe mode: the check's directory is gone, whatever it held
        assert set(Path(tempfile.gettempdir()).glob("rlvr-unsafe-*")) == unsafe_dirs
    finally:
        if v is not verifier:
            v.close()


# --- 5. smaller leaks --------------------------------------------------------------------

def test_no_host_identity_or_key_usage_is_visible(verifier):
    host = socket.gethostname()
    code = (f"import os, socket\nHOST = {host!r}\n"
            "def square(x):\n"
            "    leaks = [socket.gethostname() == HOST, os.uname().nodename == HOST]\n"
            "    for path in ('/proc/key-users', '/proc/keys', '/proc/sys/kernel/hostname'):\n"
            "        try:\n            leaks.append(bool(open(path).read()))\n"
            "        except OSError:\n            pass\n"
            "    return x * x if any(leaks) else None\n")
    assert_zero(verifier.verify(code, SQUARE))
    assert _probe(verifier, "def probe():\n    return [socket.gethostname()]\n") == ["sandbox"]


def test_a_check_holds_no_capability(verifier):
    body = ("def probe():\n"
            "    status = dict(line.split(':\\t') for line in open('/proc/self/status').read().splitlines()\n"
            "                  if line.startswith('Cap'))\n"
            "    return sorted({v.strip() for k, v in status.items() if k != 'CapBnd'})\n")
    assert _probe(verifier, body) == ["0000000000000000"]


@pytest.mark.skipif(not ROOT, reason="as root bwrap keeps every capability unless told not to")
def test_the_zygote_keeps_only_the_capabilities_it_needs(verifier):
    verifier.verify(HONEST, SQUARE)
    status = Path(f"/proc/{zygote_pid(verifier)}/status").read_text()
    effective = int(next(line for line in status.splitlines()
                         if line.startswith("CapEff:")).split()[1], 16)
    wanted = {"CAP_SETUID": 7, "CAP_SETGID": 6, "CAP_KILL": 5, "CAP_SYS_ADMIN": 21}
    assert set(sandbox.ZYGOTE_ROOT_CAPS) == set(wanted)
    assert effective == sum(1 << bit for bit in wanted.values())
