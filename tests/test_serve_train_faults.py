"""A verification server that disappears mid-run: `rlvr train` with reward.backend=remote
stops with an error naming the server's URL and the resume command; once a server is
back on that address, `--resume` finishes the run with every step logged once."""

from __future__ import annotations

import re

import pytest

from fault_helpers import Cli, complete_checkpoints, logged, logged_steps, run_rlvr, wait_until
from serve_helpers import Server
from train_helpers import TINY_OVERRIDES, plugin_reward

STEPS = 8
PACED = "fault_helpers:PacedLengthVerifier"  # the operator names it: --plugin, reward.plugins


@pytest.mark.slow
def test_server_killed_mid_run_is_named_and_the_run_resumes(tmp_path):
    run_dir = tmp_path / "run"
    server = Server("--workers", "1", "--preload", "", "--plugin", PACED)
    port = server.url.rsplit(":", 1)[1]
    trainer = None
    try:
        trainer = Cli(tmp_path / "log", "train", "--run-dir", str(run_dir), *TINY_OVERRIDES,
                      f"steps={STEPS}", "checkpoint_every=2", "keep_checkpoints=0",
                      *plugin_reward("fault_helpers:PacedLengthVerifier"),
                      "reward.backend=remote", f"reward.remote_urls=[{server.url}]")
        # Grading is most of a step (8 paced items on one server worker): the kill lands
        # mid-request or between two; either way the next batch finds no server.
        wait_until(lambda: max(logged_steps(run_dir), default=0) >= 3, "step 3", trainer)
        server.kill()
        assert trainer.wait(timeout=120) == 3, trainer.stderr()[-3000:]
        err = trainer.stderr()
        assert f"rlvr train: no rlvr serve server left: {server.url}: " in err
        assert re.search(r"(closed the connection|connection broke) mid-request|connection refused",
                         err), err[-2000:]
        saved, stopped = max(complete_checkpoints(run_dir)), max(logged_steps(run_dir))
        assert (f"the run stopped after step {stopped}; once that is fixed, continue it from "
                f"its last checkpoint (step {saved}): rlvr train --resume {run_dir}") in err
        assert "Traceback" not in err and stopped < STEPS

        server = Server("--workers", "1", "--preload", "", "--plugin", PACED, "--port", port)  # the same URL
        resumed = run_rlvr("train", "--resume", str(run_dir))
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert f"resuming {run_dir} from step {saved}" in resumed.stderr
    finally:
        if trainer is not None:
            trainer.stop()
        server.stop()
    assert logged_steps(run_dir) == list(range(1, STEPS + 1))  # each step once, in order
    rollouts = logged(run_dir, "rollouts.jsonl")
    assert [r["step"] for r in rollouts] == [s for s in range(1, STEPS + 1) for _ in range(8)]
    assert all(r["verdict"]["reason"] == "length" for r in rollouts)  # graded, not errors
