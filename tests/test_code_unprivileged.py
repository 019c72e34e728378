"""The adversarial code suites again, as an ordinary user.

The sandbox has two modes, chosen by the verifier's own uid (sandbox.py): as root, bwrap
runs without a user namespace and the check switches to an unprivileged uid; as anyone
else, bwrap makes a user namespace and the check keeps the user's uid inside it. CI runs
as root, so without this test the second mode would only ever be tried by hand. Here
the hostile suites run in a child pytest as uid nobody (code_containment.run_unprivileged)
and must pass there too. Run as a non-root user, the suites are already in that mode,
and this test has nothing to add.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from code_containment import interpreter_paths, run_unprivileged
from rlvr.data.sources import shared_data_dir

TESTS = Path(__file__).resolve().parent
SUITES = ["test_code_hacks.py", "test_code_isolation.py", "test_code_packages.py"]


@pytest.mark.skipif(os.geteuid() != 0, reason="not root: the suites already ran unprivileged")
def test_the_adversarial_suites_pass_as_an_unprivileged_user():
    for tool in ("unshare", "setpriv"):
        assert shutil.which(tool), f"{tool} (util-linux) is needed to drop to another uid"
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "--rootdir", str(TESTS.parent), *[str(TESTS / suite) for suite in SUITES]]
    # The child looks for the shared data from "/", so it is told where this run found it.
    data = str(shared_data_dir())
    done = run_unprivileged(argv, interpreter_paths() + [str(TESTS.parent), data],
                            timeout_s=600, environment={"RLVR_SHARED_DATA": data})
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    summary = re.search(r"(\d+) passed(?:, (\d+) skipped)? in ", output)
    assert summary and int(summary.group(1)) >= 55, output[-2000:]
    # Skipped there: only what needs root (the zygote's capability set as root, and a
    # memory cgroup, which an ordinary user has only where one is delegated).
    skipped = re.findall(r"^SKIPPED \[\d+\] \S+: (.*)$", output, re.MULTILINE)
    assert any("as root bwrap keeps" in reason for reason in skipped), output[-3000:]
    assert all("as root bwrap keeps" in reason or "no memory cgroup here" in reason
               for reason in skipped), skipped
