"""reward.backend=ray: the Ray actor pool gives the process pool's verdicts (time limits,
crashes, errors included), survives a killed actor, trains to the same rewards, and a
missing Ray is a ConfigError naming reward.backend before anything is built."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from rlvr.config import ConfigError, load_config
from rlvr.training.config import RewardConfig, TrainConfig
from rlvr.training.rewards import verifier_pool
from rlvr.verifiers import Case, VerifierPool
from rlvr.verifiers.base import REASON_ERROR, REASON_TIMEOUT
from train_helpers import plugin_reward, tiny_config

V = "pool_fixtures:Behaving"
ADD_TEST = {"test": "def check(candidate):\n    assert candidate(1, 2) == 3\n"
                    "    assert candidate(-4, 4) == 0\n", "entry_point": "add"}
NO_RAY = "ray is not installed (pip install 'rlvr[ray]'); the Ray verifier pool is untested"

# One batch of every kind of outcome: right and wrong answers of three verifiers, a hang
# past its limit, a raise, a crash, a memory bomb, a non-Verdict, an unknown verifier.
MIXED = [
    Case("math", "The answer is \\boxed{\\frac{1}{2}}", "\\frac12"),
    Case("math", "So we get \\boxed{3}", "\\frac12"),
    Case("exact", "#### 42", "42"),
    Case("exact", "#### 41", "42"),
    Case("code", "def add(a, b):\n    return a + b\n", ADD_TEST),
    Case("code", "def add(a, b):\n    return 1\n", ADD_TEST),
    Case(V, "hang", None, timeout_s=1.0),
    Case(V, "raise", None),
    Case(V, "exit", None),
    Case(V, "memory", None),
    Case(V, "not-a-verdict", None),
    Case("no-such-verifier", "x", None),
    Case(V, "0.25", None),
]
PRELOAD = ("math", "exact", "code")


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray", reason=NO_RAY)
    # 4 logical CPUs (on however many cores): the shared pool's 2 actors and a training
    # run's 1 fit at once; each actor asks Ray for one CPU.
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def ray_pool(ray_cluster):
    from rlvr.verifiers.ray_pool import RayVerifierPool

    with RayVerifierPool(workers=2, memory_mb=1024, preload=PRELOAD,
                         plugins=[V]).start() as pool:
        yield pool


def _triples(verdicts):
    return [(v.passed, v.score, v.reason) for v in verdicts]


def test_ray_pool_gives_the_process_pools_verdicts(ray_pool):
    with VerifierPool(workers=2, memory_mb=1024, preload=PRELOAD, plugins=[V]) as pool:
        expected = pool.verify(MIXED)
    start = time.monotonic()
    got = ray_pool.verify(MIXED)
    assert time.monotonic() - start < 30
    assert _triples(got) == _triples(expected)
    # The outcomes are the interesting ones, not the same failure everywhere.
    assert [v.reason for v in got[:6]] == ["correct", "wrong_answer", "correct",
                                           "wrong_answer", "correct", "failed_tests"]
    assert got[6].reason == REASON_TIMEOUT and got[6].details == {"limit_s": 1.0}
    assert got[7].details == expected[7].details == {"error": "RuntimeError: boom"}
    assert got[8].reason == REASON_ERROR  # the crashed actor: an error, not a hung batch
    assert got[9].details == {"error": "memory limit exceeded"}
    assert got[11].is_invalid and got[12].score == 0.25
    # Every detail too, but where the process shows: the crash's message, Behaving's pid.
    for i, (a, b) in enumerate(zip(got, expected)):
        if i not in (8, 12):
            assert a.details == b.details, MIXED[i]


def test_results_keep_order_and_use_every_actor(ray_pool):
    ray_pool.start()  # replacements of actors an earlier test killed are up again
    values = [i / 20 for i in range(21)]
    verdicts = ray_pool.verify([Case(V, str(v), None) for v in values] * 2)
    assert [v.score for v in verdicts] == values * 2
    assert len({v.details["pid"] for v in verdicts}) == 2
    assert ray_pool.verify([]) == []


def test_killed_actor_mid_batch_is_an_error_and_the_pool_keeps_working(ray_pool):
    cases = [Case(V, "sleep", None, timeout_s=60.0)] + [Case(V, "0.5", None)] * 6
    ray_pool.start()
    result: list = []
    worker = threading.Thread(target=lambda: result.append(ray_pool.verify(cases)))
    restarts = ray_pool.restarts
    start = time.monotonic()
    worker.start()
    victim = None
    while victim is None and time.monotonic() - start < 20:
        victim = next((s.pid for s in ray_pool._slots if s.item == 0 and s.pid), None)
        time.sleep(0.05)
    assert victim is not None, "the sleeping item never reached an actor"
    time.sleep(0.3)  # the item is running in the actor
    os.kill(victim, signal.SIGKILL)  # what the OOM killer or a lost node does
    worker.join(timeout=30)
    assert not worker.is_alive(), "the batch hung on a dead actor"
    verdicts = result[0]
    assert verdicts[0].reason == REASON_ERROR and "died" in verdicts[0].details["error"]
    assert [v.score for v in verdicts[1:]] == [0.5] * 6
    assert time.monotonic() - start < 30  # not the item's 60 s limit
    assert ray_pool.restarts == restarts + 1
    again = ray_pool.verify([Case(V, "1", None), Case(V, "0.25", None)] * 2)
    assert [v.score for v in again] == [1.0, 0.25] * 2
    assert victim not in {v.details["pid"] for v in again}


def test_actors_that_die_at_start_up_raise_clearly(ray_cluster):
    from rlvr.verifiers.ray_pool import RayVerifierPool

    # A preload whose process exits while it loads: the actor dies before "ready", as
    # when rlvr cannot be imported on a node; three deaths end the batch loudly. (It used
    # 1 MB of RLIMIT_DATA, but a Ray worker short of memory may hang instead of dying.)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="actors die at start-up.*ActorDiedError"):
        with RayVerifierPool(workers=1, preload=["ray_helpers:DiesOnLoad"],
                             plugins=["ray_helpers:DiesOnLoad"]) as pool:
            pool.verify([Case("exact", "#### 1", "1")])
    assert time.monotonic() - start < 60


def test_factory_builds_the_configured_pool(ray_cluster):
    from rlvr.verifiers.ray_pool import RayVerifierPool

    process = verifier_pool(RewardConfig(workers=1))
    ray_backed = verifier_pool(RewardConfig(workers=1, backend="ray", timeout_s=3.0),
                               preload=["exact"])
    try:
        assert type(process) is VerifierPool
        assert isinstance(ray_backed, RayVerifierPool)
        assert (ray_backed.n_workers, ray_backed.timeout_s, ray_backed.preload) == (
            1, 3.0, ("exact",))
    finally:
        process.close()
        ray_backed.close()


def test_pool_starts_and_stops_its_own_ray_when_none_runs():
    """What `rlvr train reward.backend=ray` does in a fresh process: a local Ray, started
    by the pool and shut down with it."""
    pytest.importorskip("ray", reason=NO_RAY)
    script = (
        "import ray\n"
        "from rlvr.verifiers import Case\n"
        "from rlvr.verifiers.ray_pool import RayVerifierPool\n"
        "with RayVerifierPool(workers=1, preload=['exact']) as pool:\n"
        "    verdicts = pool.verify([Case('exact', '#### 7', '7'), Case('exact', '8', '7')])\n"
        "    assert ray.is_initialized()\n"
        "assert not ray.is_initialized()\n"
        "print([v.reason for v in verdicts])\n")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "['correct', 'wrong_answer']"


def test_zero_workers_means_the_cpus_ray_has_free(ray_cluster):
    from rlvr.verifiers.ray_pool import RayVerifierPool

    pool = RayVerifierPool(workers=0)
    try:
        pool._connect()
        assert pool.n_workers == int(ray_cluster.available_resources()["CPU"])
    finally:
        pool.close()
    assert ray_cluster.is_initialized()  # a Ray the pool did not start stays up


# --- config: no Ray installed --------------------------------------------------------------

def test_backend_ray_without_ray_is_a_config_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails, as if absent
    with pytest.raises(ConfigError, match=r"reward\.backend: .*pip install 'rlvr\[ray\]'"):
        load_config(TrainConfig, overrides=["reward.backend=ray"])
    assert load_config(TrainConfig).reward.backend == "process"  # the default needs no Ray


def test_train_refuses_backend_ray_without_ray_before_building(monkeypatch, tmp_path):
    from rlvr.training.run import train

    cfg = tiny_config("steps=1")
    cfg.reward.backend = "ray"  # set after loading, so only train()'s own check can catch it
    monkeypatch.setitem(sys.modules, "ray", None)
    monkeypatch.setattr("rlvr.training.run.load_policy",
                        lambda *a: pytest.fail("a model was built before the check"))
    with pytest.raises(ConfigError, match=r"^reward\.backend: "):
        train(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_ray_address_needs_backend_ray():
    with pytest.raises(ConfigError, match=r"reward\.ray_address: needs backend=ray"):
        load_config(TrainConfig, overrides=["reward.ray_address=auto"])


def test_unknown_backend_is_refused():
    with pytest.raises(ConfigError, match=r"reward\.backend"):
        load_config(TrainConfig, overrides=["reward.backend=dask"])


def test_a_resumed_run_may_move_its_verifiers_to_ray(tmp_path):
    pytest.importorskip("ray", reason=NO_RAY)
    from rlvr.config import save_config
    from rlvr.training.resume import resume_config

    save_config(tiny_config("steps=2"), tmp_path / "config.yaml")
    cfg = resume_config(tmp_path, ["reward.backend=ray", "reward.ray_address=auto"])
    assert (cfg.reward.backend, cfg.reward.ray_address) == ("ray", "auto")


# --- training ------------------------------------------------------------------------------

def _rewards(run_dir):
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [(m["step"], m["reward/mean"]) for m in map(json.loads, lines)]


def test_two_steps_with_ray_reward_as_with_processes(ray_cluster, tmp_path, monkeypatch):
    from rlvr.training.run import train
    from rlvr.verifiers.ray_pool import RayVerifierPool

    batches = []  # what the Ray pool graded: evaluations before/after and both steps
    real_verify = RayVerifierPool.verify
    monkeypatch.setattr(RayVerifierPool, "verify",
                        lambda self, cases: batches.append(len(cases)) or
                        real_verify(self, cases))
    # A reward an untrained model earns unevenly, so the steps' means say something.
    settings = ("steps=2", "checkpoint_every=0", *plugin_reward("train_helpers:LengthVerifier"))
    train(tiny_config(*settings), tmp_path / "process")
    assert batches == []
    train(tiny_config(*settings, "reward.backend=ray"), tmp_path / "ray")
    assert batches == [6, 8, 8, 6]  # data.eval_size=6; 4 prompts x 2 samples per step
    assert load_config(TrainConfig, tmp_path / "ray" / "config.yaml").reward.backend == "ray"
    expected = _rewards(tmp_path / "process")
    assert [step for step, _ in expected] == [1, 2]
    assert any(0 < mean < 1 for _, mean in expected)
    assert _rewards(tmp_path / "ray") == expected
    assert ray_cluster.is_initialized()  # the run joined the test's Ray and left it up
