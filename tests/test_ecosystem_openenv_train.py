"""`rlvr train` against an OpenEnv server, end to end as a user runs it: a run that
trains on the server, the server going away (the resumed run stops with exit 3, naming
the server's URL and the command that resumes it, its checkpoint kept), and the resume
on a server that is back (at a new address: `episodes.options.url` may change on resume)
finishing the run."""

from __future__ import annotations

import json

import pytest

from cli_helpers import run_cli
from train_helpers import TINY_OVERRIDES

pytest.importorskip("openenv.core", reason="openenv-core is not installed "
                    "(pip install 'rlvr[openenv]')")
from openenv_helpers import toy_server  # noqa: E402


def _episodes(url: str) -> list[str]:
    return ["episodes.environment=openenv", f"episodes.options={{url: '{url}'}}",
            "episodes.max_turns=3", "episodes.max_tokens=64", "episodes.step_timeout_s=20"]


def _steps_done(run_dir) -> int:
    return json.loads((run_dir / "summary.json").read_text())["steps"]


def test_a_run_on_an_openenv_server_stops_with_exit_3_when_it_is_gone_and_resumes(tmp_path):
    run_dir = tmp_path / "run"
    base = [*TINY_OVERRIDES, "sft.steps=0", "checkpoint_every=1", "data.eval_size=2",
            "sampling.prompts_per_step=2"]
    server = toy_server()
    try:
        first = run_cli("train", "--run-dir", str(run_dir), "--quiet", "steps=1", *base,
                        *_episodes(server.url), timeout=240)
        assert first.returncode == 0, first.stderr[-3000:]
        assert _steps_done(run_dir) == 1
    finally:
        server.stop()
    gone_url = server.url  # nobody listens there now
    gone = run_cli("train", "--resume", str(run_dir), "--quiet", "steps=2", timeout=240)
    assert gone.returncode == 3, gone.stderr[-3000:]
    assert gone_url in gone.stderr and f"rlvr train --resume {run_dir}" in gone.stderr
    back = toy_server()
    try:
        resumed = run_cli("train", "--resume", str(run_dir), "--quiet", "steps=2",
                          f"episodes.options.url={back.url}", timeout=240)
    finally:
        back.stop()
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert _steps_done(run_dir) == 2
