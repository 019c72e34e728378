"""A back-of-envelope simulator for one rlvr RL step at scale (docs/SCALING.md).

Pure Python, no torch. Inputs: a model's shapes, a GPU's datasheet numbers, the step's
workload (prompts x group, prompt/response lengths) and a set of *assumptions*
(`Assumptions`: MFU, decode bandwidth efficiency, verifier cost, sync bandwidths).
Outputs: per-rank memory under FSDP2, per-phase times, and step time / GPU utilisation
for a colocated placement (generate, then train, on the same GPUs), a separate one
(generation pool and training pool in parallel, one step of policy lag) and an
asynchronous one (separate pools under rollout.max_staleness = K: `async_step`).

What is measured and what is assumed:
  measured (benchmarks/RESULTS.md, 2-core CPU, no GPU): the file weight sync through
      /dev/shm (write ~0.24 s + vLLM reload ~0.35 s for 538 MB) and the math
      verifier's cost (67 verdicts/s on 2 cores -> ~0.03 s per item per core).
  assumed: every GPU number. No GPU has been available to this project; the GPU
      constants below are datasheet peaks times an efficiency we chose, checked only
      against published verl / OpenRLHF figures (`published_comparison`).

    python -m benchmarks.tools.scaling_sim            # every table docs/SCALING.md quotes
    python -m benchmarks.tools.scaling_sim --table memory
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace

GIB = 2 ** 30


@dataclass(frozen=True)
class ModelSpec:
    """A Llama/Qwen2-style decoder (SwiGLU MLP, grouped-query attention, no biases)."""
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied: bool

    @property
    def block_params(self) -> int:
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        attention = self.hidden * q * 2 + self.hidden * kv * 2   # q, o; k, v
        return attention + 3 * self.hidden * self.intermediate   # gate, up, down

    @property
    def embed_params(self) -> int:
        return self.vocab * self.hidden

    @property
    def params(self) -> int:
        heads = 1 if self.tied else 2
        return self.layers * self.block_params + heads * self.embed_params

    @property
    def kv_bytes_per_token(self) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * 2   # k and v, bf16


# Qwen2.5 shapes (its config.json values: layers, hidden, heads/kv heads, MLP, vocab).
MODELS = {
    "1.5B": ModelSpec("1.5B", 28, 1536, 12, 2, 128, 8960, 151936, tied=True),
    "7B": ModelSpec("7B", 28, 3584, 28, 4, 128, 18944, 152064, tied=False),
    "32B": ModelSpec("32B", 64, 5120, 40, 8, 128, 27648, 152064, tied=False),
}


@dataclass(frozen=True)
class GPUSpec:
    """Datasheet peaks (dense bf16, HBM) and effective link bandwidths (assumed)."""
    name: str
    peak_flops: float
    hbm_bw: float          # bytes/s
    memory: float          # bytes
    nvlink_bw: float       # effective all-gather/broadcast bytes/s inside a node
    net_bw: float          # effective bytes/s per GPU between nodes (one NIC per GPU)
    pcie_bw: float         # effective pinned host<->device bytes/s


GPUS = {
    "H100": GPUSpec("H100 SXM", 989e12, 3.35e12, 80 * GIB, 300e9, 40e9, 40e9),
    "H200": GPUSpec("H200 SXM", 989e12, 4.8e12, 140 * GIB, 300e9, 40e9, 40e9),
    # only for comparing with published runs:
    "H20": GPUSpec("H20", 148e12, 4.0e12, 96 * GIB, 300e9, 40e9, 40e9),
    "A800": GPUSpec("A800 SXM", 312e12, 2.0e12, 80 * GIB, 150e9, 20e9, 20e9),
}

# benchmarks/RESULTS.md, the vLLM engine: 538 MB written to /dev/shm in ~0.24 s, reloaded by
# vLLM in ~0.35 s (the probe check, ~0.27 s, is left out: it does not grow with size).
FILE_SYNC_S_PER_BYTE = (0.24 + 0.35) / 538e6
# benchmarks/RESULTS.md, headline table, math verifier: 67 verdicts/s on 2 cores.
MATH_VERIFY_S_PER_ITEM = 2 / 67


@dataclass(frozen=True)
class Assumptions:
    """Every knob that is not a measurement; docs/SCALING.md lists where each comes from."""
    mfu: float = 0.30               # training and log-prob passes (OpenRLHF A800: 24-37%)
    decode_bw_eff: float = 0.70     # fraction of HBM bandwidth a decode step reaches
    decode_flop_eff: float = 0.50   # fraction of peak for the decode GEMMs at large batch
    prefill_flop_eff: float = 0.50
    vllm_mem_util: float = 0.85     # vLLM's gpu_memory_utilization
    max_seqs: int = 256             # vLLM max_num_seqs per instance
    verify_s_per_item: float = MATH_VERIFY_S_PER_ITEM   # per CPU worker (measured, math)
    cpu_workers: int = 64           # Ray verifier actors
    wake_s: float = 2.0             # colocated: vLLM sleep + wake (KV re-allocation) per step
    offload_optimizer: bool = False  # colocated: AdamW states to host during generation
    sync_fixed_s: float = 0.1       # per-sync overhead (version bump, probe, launches)
    checkpointing: bool = True      # activation checkpointing in the update
    logit_bytes: int = 6            # per vocab entry per token: bf16 logits + fp32 log-softmax
    workspace_bytes: float = 3 * GIB   # CUDA context, allocator slack, NCCL buffers


@dataclass(frozen=True)
class Workload:
    prompts: int = 512
    group: int = 16
    prompt_len: int = 512
    mean_response: int = 2048
    max_response: int = 8192
    micro_batch_tokens: int = 8192   # tokens per micro-batch per rank (packed)
    ref_pass: bool = True            # KL to a reference policy needs its log-probs

    @property
    def completions(self) -> int:
        return self.prompts * self.group

    @property
    def tokens(self) -> int:
        """Prompt + response tokens the trainer processes in one step."""
        return self.completions * (self.prompt_len + self.mean_response)


# ---------------------------------------------------------------- memory per rank

PRECISIONS = {
    # bytes per parameter held sharded: params, grads, AdamW m and v
    "fp32-master": {"params": 4, "grads": 4, "optimizer": 8},   # bf16 compute copies gathered
    "bf16": {"params": 2, "grads": 2, "optimizer": 8},          # bf16 params/grads, fp32 m, v
}


def activation_bytes_per_token(model: ModelSpec, checkpointing: bool, logit_bytes: int) -> float:
    """Saved activations per token (bf16), flash attention (no score matrix kept).

    One layer keeps: both RMSNorm inputs and outputs (4h), q|k|v (h + 2kv), the attention
    output (h), gate and up outputs (2I) and their SiLU product (I): 2 * (6h + 2kv + 3I)
    bytes. With per-layer checkpointing only each layer's input stays (2h bytes) plus one
    layer's full set while it is recomputed. The logits row adds `logit_bytes * vocab`.
    """
    h, kv, inter = model.hidden, model.kv_heads * model.head_dim, model.intermediate
    layer = 2 * (6 * h + 2 * kv + 3 * inter)
    body = model.layers * 2 * h + layer if checkpointing else model.layers * layer
    return body + logit_bytes * model.vocab


def memory_per_rank(model: ModelSpec, shard: int, precision: str, work: Workload,
                    a: Assumptions) -> dict[str, float]:
    """Bytes on one trainer rank during the update, FSDP2 sharding over `shard` ranks."""
    per_param = PRECISIONS[precision]
    n = model.params
    states = {k: v * n / shard for k, v in per_param.items()}
    ref = 2 * n / shard if work.ref_pass else 0.0        # bf16 reference, sharded too
    unit = max(model.block_params, model.embed_params)
    # one unit all-gathered in bf16 plus the prefetched next one, and its unsharded grad
    # before the reduce-scatter (fp32 reduce dtype)
    transient = unit * (2 * 2 + 4)
    acts = work.micro_batch_tokens * activation_bytes_per_token(
        model, a.checkpointing, a.logit_bytes)
    out = {**states, "reference": ref, "gathered": transient, "activations": acts,
           "workspace": a.workspace_bytes}
    out["total"] = sum(out.values())
    return out


# ---------------------------------------------------------------- FLOPs and phase times

def forward_flops_per_token(model: ModelSpec, seq: int) -> float:
    """2N for the matmuls plus causal attention (QK^T and AV over ~seq/2 keys)."""
    attention = 2 * model.layers * model.heads * model.head_dim * seq
    return 2 * model.params + attention


def train_flops_per_token(model: ModelSpec, seq: int, checkpointing: bool) -> float:
    """Forward + backward (2x forward), plus a recomputed forward with checkpointing."""
    return forward_flops_per_token(model, seq) * (4 if checkpointing else 3)


def decode_rate(model: ModelSpec, gpu: GPUSpec, tp: int, avg_ctx: float,
                a: Assumptions) -> tuple[float, float]:
    """(tokens/s per GPU at full batch, seconds per decode step for a lone sequence).

    Roofline: a step reads the weights once and every live sequence's KV cache; it is
    bound by HBM bandwidth unless the batch's GEMMs need longer at `decode_flop_eff`.
    The batch is what fits in the KV memory left after the weights, capped at max_seqs.
    """
    weights = 2 * model.params
    free = gpu.memory * tp * a.vllm_mem_util - weights - 2 * GIB * tp
    if free <= 0:
        raise ValueError(f"{model.name} does not fit vLLM on {tp} x {gpu.name}")
    seqs = max(1.0, min(a.max_seqs, free / (model.kv_bytes_per_token * avg_ctx)))
    bandwidth = tp * gpu.hbm_bw * a.decode_bw_eff
    memory_s = (weights + seqs * avg_ctx * model.kv_bytes_per_token) / bandwidth
    compute_s = seqs * 2 * model.params / (tp * gpu.peak_flops * a.decode_flop_eff)
    step = max(memory_s, compute_s)
    return seqs / step / tp, weights / bandwidth


def generation_time(model: ModelSpec, gpu: GPUSpec, gpus: int, tp: int, work: Workload,
                    a: Assumptions) -> tuple[float, float]:
    """(seconds, busy seconds): the throughput-bound time, or the latency floor of the
    longest response (max_response lone decode steps) when that is longer. The busy part
    is the throughput-bound work; the rest of a floor-bound phase is long-tail idling."""
    rate, lone_step = decode_rate(model, gpu, tp, work.prompt_len + work.mean_response / 2, a)
    prefill = (work.prompts * work.prompt_len * forward_flops_per_token(model, work.prompt_len)
               / (gpus * gpu.peak_flops * a.prefill_flop_eff))   # prefix cache: once per prompt
    work_s = work.completions * work.mean_response / (gpus * rate) + prefill
    return max(work_s, work.max_response * lone_step + prefill), work_s


def phase_times(model: ModelSpec, gpu: GPUSpec, gen_gpus: int, train_gpus: int, tp: int,
                work: Workload, a: Assumptions) -> dict[str, float]:
    seq = work.prompt_len + work.mean_response
    rate = train_gpus * gpu.peak_flops * a.mfu
    gen, gen_busy = generation_time(model, gpu, gen_gpus, tp, work, a)
    forward = work.tokens * forward_flops_per_token(model, seq) / rate
    return {
        "generate": gen,
        "generate_busy": gen_busy,
        "verify": work.completions * a.verify_s_per_item / a.cpu_workers,
        "old_logprob": forward,
        "ref_logprob": forward if work.ref_pass else 0.0,
        "update": work.tokens * train_flops_per_token(model, seq, a.checkpointing) / rate,
    }


# ---------------------------------------------------------------- weight sync

SYNC_MODES = ("inprocess", "file", "nccl_rank0", "nccl_sharded")


def sync_time(mode: str, model: ModelSpec, gpu: GPUSpec, train_gpus: int, tp: int,
              a: Assumptions) -> float:
    """Seconds to put the trainer's new bf16 weights (2N bytes) into every vLLM rank.

    inprocess    colocated, exists (`sync: direct`): each rank all-gathers the full
                 tensors from the FSDP shards (NVLink inside a node, the network beyond).
    file         server mode today (`sync: file`): safetensors in /dev/shm, same host only;
                 the measured CPU rate.
    nccl_rank0   planned: gather to trainer rank 0, pipelined broadcast to all vLLM ranks.
    nccl_sharded planned: each vLLM GPU receives only its TP shard, from many senders.
    """
    size = 2 * model.params
    gather_bw = gpu.nvlink_bw if train_gpus <= 8 else gpu.net_bw
    if mode == "inprocess":
        return size * (1 - 1 / train_gpus) / gather_bw + a.sync_fixed_s
    if mode == "file":
        return size * FILE_SYNC_S_PER_BYTE + a.sync_fixed_s
    if mode == "nccl_rank0":
        return size / gather_bw + size / gpu.net_bw + a.sync_fixed_s
    if mode == "nccl_sharded":
        return size / tp / gpu.net_bw + a.sync_fixed_s
    raise ValueError(f"unknown sync mode {mode!r}; one of {SYNC_MODES}")


def colocated_transition(model: ModelSpec, gpu: GPUSpec, train_gpus: int, precision: str,
                         a: Assumptions) -> float:
    """Sleep/wake of the colocated vLLM, plus moving AdamW states off and back if asked."""
    moved = 0.0
    if a.offload_optimizer:
        moved = 2 * PRECISIONS[precision]["optimizer"] * model.params / train_gpus / gpu.pcie_bw
    return a.wake_s + moved


# ---------------------------------------------------------------- step composition

@dataclass
class StepResult:
    placement: str
    step_s: float
    utilisation: float                 # busy GPU-seconds / (GPUs x step)
    parts: dict[str, float] = field(default_factory=dict)


def colocated_step(parts: dict[str, float], busy: dict[str, float]) -> StepResult:
    """Every phase runs in turn on the same GPUs: the step is the sum of its parts."""
    step = sum(parts.values())
    return StepResult("colocated", step, min(1.0, sum(busy.values()) / step), dict(parts))


def separate_step(producer: float, consumer: float, sync: float, gen_gpus: int,
                  train_gpus: int, gen_busy: float, train_busy: float) -> StepResult:
    """Pipelined (one step of policy lag): generation of step k+1 runs while step k
    trains, so the step is the slower pool plus the sync that both wait for."""
    step = max(producer, consumer) + sync
    used = gen_busy * gen_gpus + train_busy * train_gpus
    parts = {"producer": producer, "consumer": consumer, "sync": sync}
    return StepResult("separate", step, min(1.0, used / ((gen_gpus + train_gpus) * step)), parts)


def simulate_colocated(model: ModelSpec, gpu: GPUSpec, gpus: int, tp: int, work: Workload,
                       a: Assumptions, precision: str = "fp32-master") -> StepResult:
    t = phase_times(model, gpu, gpus, gpus, tp, work, a)
    parts = {k: t[k] for k in ("generate", "verify", "old_logprob", "ref_logprob", "update")}
    parts["sleep_wake"] = colocated_transition(model, gpu, gpus, precision, a)
    parts["sync"] = sync_time("inprocess", model, gpu, gpus, tp, a)
    busy = {"generate": t["generate_busy"], "old_logprob": t["old_logprob"],
            "ref_logprob": t["ref_logprob"], "update": t["update"]}
    return colocated_step(parts, busy)


def simulate_separate(model: ModelSpec, gpu: GPUSpec, gen_gpus: int, train_gpus: int,
                      tp: int, work: Workload, a: Assumptions,
                      sync_mode: str = "nccl_rank0") -> StepResult:
    t = phase_times(model, gpu, gen_gpus, train_gpus, tp, work, a)
    producer = t["generate"] + t["verify"]
    consumer = t["old_logprob"] + t["ref_logprob"] + t["update"]
    sync = sync_time(sync_mode, model, gpu, train_gpus, tp, a)
    return separate_step(producer, consumer, sync, gen_gpus, train_gpus,
                         t["generate_busy"], consumer)


def verify_tail(group: int, a: Assumptions) -> float:
    """Seconds to grade the last group once it is sampled: its `group` items spread over
    the CPU workers. With grading per group as groups complete, this is the least of
    the verification a step cannot hide behind generation."""
    return -(-group // a.cpu_workers) * a.verify_s_per_item


def async_step(generate: float, verify: float, tail: float, consumer: float, sync: float,
               k: int) -> dict[str, float]:
    """One step of separate pools under rollout.max_staleness = k, steady state.

    k = 0: the pools wait on each other (sample, grade the batch, train, sync): the
    sum. k >= 1: the generation pool samples step s+1 (grading each group as it
    completes) while the training pool trains step s and publishes its weights; the
    generation pool does not wait for the sync (it samples with weights up to k
    versions old), so the step is the slower side: max(generate + exposed verify,
    train + sync). Exposed verify: what grading leaves after generation ends, at least
    the last group's `tail`, more when grading is slower than sampling. Phase times are
    constant here, so k = 2 gives what k = 1 does (a larger k only absorbs variation)."""
    if k < 0:
        raise ValueError(f"k (max_staleness) must be >= 0, got {k}")
    if k == 0:
        return {"producer": generate + verify, "trainer": consumer + sync,
                "exposed_verify": verify, "step": generate + verify + consumer + sync}
    exposed = max(tail, verify - generate)
    producer, trainer = generate + exposed, consumer + sync
    return {"producer": producer, "trainer": trainer, "exposed_verify": exposed,
            "step": max(producer, trainer)}


def simulate_async(model: ModelSpec, gpu: GPUSpec, gen_gpus: int, train_gpus: int, tp: int,
                   work: Workload, a: Assumptions, k: int,
                   sync_mode: str = "nccl_rank0") -> dict[str, float]:
    t = phase_times(model, gpu, gen_gpus, train_gpus, tp, work, a)
    consumer = t["old_logprob"] + t["ref_logprob"] + t["update"]
    return async_step(t["generate"], t["verify"], verify_tail(work.group, a), consumer,
                      sync_time(sync_mode, model, gpu, train_gpus, tp, a), k)


def best_async_split(model: ModelSpec, gpu: GPUSpec, gpus: int, tp: int, work: Workload,
                     a: Assumptions) -> int:
    """The generation-pool size (a multiple of tp) with the shortest k = 1 step."""
    splits = range(tp, gpus, tp)
    if not splits:
        raise ValueError(f"{gpus} GPUs cannot hold a generation pool of tp={tp} and a trainer")
    return min(splits, key=lambda gen: simulate_async(model, gpu, gen, gpus - gen, tp, work,
                                                     a, 1)["step"])


def best_split(model: ModelSpec, gpu: GPUSpec, gpus: int, tp: int, work: Workload,
               a: Assumptions, sync_mode: str = "nccl_rank0") -> tuple[int, StepResult]:
    """The generation-pool size (a multiple of tp) with the shortest separate step."""
    best = None
    for gen in range(tp, gpus, tp):
        result = simulate_separate(model, gpu, gen, gpus - gen, tp, work, a, sync_mode)
        if best is None or result.step_s < best[1].step_s:
            best = (gen, result)
    if best is None:
        raise ValueError(f"{gpus} GPUs cannot hold a generation pool of tp={tp} and a trainer")
    return best


def tokens_per_gpu_s(result: StepResult, work: Workload, gpus: int) -> float:
    """verl's perf/throughput: (prompt + response) tokens / (step seconds x GPUs)."""
    return work.tokens / (result.step_s * gpus)


# ---------------------------------------------------------------- scenarios and tables

TP = {"1.5B": 1, "7B": 1, "32B": 2}     # vLLM tensor parallel size per instance (H100)
SCALES = {                               # GPUs -> the step's workload at that scale
    8: Workload(prompts=128, group=8),
    64: Workload(prompts=512, group=16),
    512: Workload(prompts=2048, group=16),
}


def _table(header: list[str], rows: list[list]) -> str:
    lines = [header, ["---"] * len(header), *rows]
    return "\n".join("| " + " | ".join(str(c) for c in r) + " |" for r in lines)


def memory_table(a: Assumptions = Assumptions(), work: Workload = Workload()) -> str:
    rows = []
    for name, model in MODELS.items():
        for shard in (8, 64, 512):
            for precision in PRECISIONS:
                on, off = (memory_per_rank(model, shard, precision, work,
                                           replace(a, checkpointing=ckpt)) for ckpt in (True, False))
                states = on["params"] + on["grads"] + on["optimizer"]
                rows.append([name, shard, precision, f"{states / GIB:.1f}",
                             f"{on['reference'] / GIB:.1f}", f"{on['gathered'] / GIB:.1f}",
                             f"{on['activations'] / GIB:.1f}", f"{off['activations'] / GIB:.1f}",
                             f"{on['total'] / GIB:.1f}", f"{off['total'] / GIB:.1f}"])
    header = ["model", "FSDP shard", "precision", "states GiB", "ref GiB", "gathered GiB",
              "acts ckpt GiB", "acts no-ckpt GiB", "total ckpt GiB", "total no-ckpt GiB"]
    return (f"{work.micro_batch_tokens} tokens per micro-batch per rank; reference policy "
            f"{'held' if work.ref_pass else 'absent'}; workspace {a.workspace_bytes / GIB:.0f} "
            f"GiB. H100 has 80 GiB, H200 ~140.\n\n" + _table(header, rows))


def step_table(gpu: GPUSpec = GPUS["H100"], a: Assumptions = Assumptions()) -> str:
    rows = []
    for gpus, work in SCALES.items():
        for name, model in MODELS.items():
            tp = TP[name]
            col = simulate_colocated(model, gpu, gpus, tp, work, a)
            gen, sep = best_split(model, gpu, gpus, tp, work, a)
            rows.append([gpus, name, work.completions, f"{col.step_s:.0f}",
                         f"{col.utilisation:.2f}", f"{tokens_per_gpu_s(col, work, gpus):.0f}",
                         f"{gen}:{gpus - gen}", f"{sep.step_s:.0f}", f"{sep.utilisation:.2f}",
                         f"{tokens_per_gpu_s(sep, work, gpus):.0f}",
                         f"{col.step_s / sep.step_s:.2f}"])
    header = ["GPUs", "model", "completions", "coloc step s", "coloc util", "coloc tok/s/GPU",
              "sep gen:train", "sep step s", "sep util", "sep tok/s/GPU", "coloc/sep"]
    note = f"{gpu.name}, prompt 512, mean response 2048, max 8192 tokens.\n\n"
    return note + _table(header, rows)


def parts_table(model_name: str = "7B", gpus: int = 64, gpu: GPUSpec = GPUS["H100"],
                a: Assumptions = Assumptions()) -> str:
    model, tp, work = MODELS[model_name], TP[model_name], SCALES[gpus]
    col = simulate_colocated(model, gpu, gpus, tp, work, a)
    gen, sep = best_split(model, gpu, gpus, tp, work, a)
    t = phase_times(model, gpu, gen, gpus - gen, tp, work, a)
    rows = [[k, f"{v:.1f}", f"{v / col.step_s:.0%}"] for k, v in col.parts.items()]
    rows.append(["**step**", f"{col.step_s:.1f}", f"util {col.utilisation:.2f}"])
    sep_rows = [[k, f"{t[k]:.1f}"] for k in ("generate", "verify", "old_logprob",
                                              "ref_logprob", "update")]
    sep_rows += [["producer (gen+verify)", f"{sep.parts['producer']:.1f}"],
                 ["consumer (logprobs+update)", f"{sep.parts['consumer']:.1f}"],
                 ["sync (nccl_rank0)", f"{sep.parts['sync']:.1f}"],
                 ["**step** = max + sync", f"{sep.step_s:.1f} (util {sep.utilisation:.2f})"]]
    return (f"{model_name} on {gpus} x {gpu.name}, {work.completions} completions.\n\n"
            f"Colocated:\n\n" + _table(["phase", "s", "share"], rows)
            + f"\n\nSeparate, {gen} generation : {gpus - gen} training GPUs:\n\n"
            + _table(["phase", "s"], sep_rows))


ASYNC_VERIFIERS = {"math": MATH_VERIFY_S_PER_ITEM, "remote 1 s": 1.0}


def async_table(gpu: GPUSpec = GPUS["H100"], a: Assumptions = Assumptions()) -> str:
    """Separate pools, the k = 1 best split kept for every k (only max_staleness
    changes), with the measured math verifier and an assumed 1 s/item remote one."""
    rows = []
    for gpus, work in SCALES.items():
        for name, model in MODELS.items():
            for label, per_item in ASYNC_VERIFIERS.items():
                b = replace(a, verify_s_per_item=per_item)
                tp = TP[name]
                gen = best_async_split(model, gpu, gpus, tp, work, b)
                steps = [simulate_async(model, gpu, gen, gpus - gen, tp, work, b, k)
                         for k in (0, 1, 2)]
                rows.append([gpus, name, label, f"{gen}:{gpus - gen}",
                             *(f"{r['step']:.0f}" for r in steps),
                             f"{steps[0]['exposed_verify']:.1f}",
                             f"{steps[1]['exposed_verify']:.2f}",
                             f"{steps[0]['step'] / steps[1]['step']:.2f}"])
    header = ["GPUs", "model", "verifier", "gen:train", "K=0 step s", "K=1 step s",
              "K=2 step s", "K=0 verify s", "K>=1 exposed verify s", "K=0/K=1"]
    note = (f"{gpu.name}, prompt 512, mean response 2048, max 8192 tokens; "
            f"{a.cpu_workers} CPU verifier workers; sync nccl_rank0.\n\n")
    return note + _table(header, rows)


def sync_table(gpu: GPUSpec = GPUS["H100"], a: Assumptions = Assumptions()) -> str:
    rows = []
    for name, model in MODELS.items():
        tp = TP[name]
        rows.append([name, f"{2 * model.params / 1e9:.1f}",
                     f"{sync_time('inprocess', model, gpu, 8, tp, a):.2f}",
                     f"{sync_time('file', model, gpu, 8, tp, a):.1f}",
                     f"{sync_time('nccl_rank0', model, gpu, 8, tp, a):.2f}",
                     f"{sync_time('nccl_rank0', model, gpu, 64, tp, a):.2f}",
                     f"{sync_time('nccl_sharded', model, gpu, 64, tp, a):.2f}"])
    header = ["model", "bf16 GB", "inprocess (8 ranks) s", "file /dev/shm s",
              "nccl rank0 (8 trainers) s", "nccl rank0 (>8 trainers) s", "nccl sharded s"]
    return _table(header, rows)


# ---------------------------------------------------------------- published figures

# verl docs/advance/one_step_off.md (volcengine/verl, "Last updated: 07/17/2025"):
# Qwen2.5-Math-7B, DAPO, 16 H20 (separate: 4 generation + 12 training), vLLM + FSDP2.
VERL_ONE_STEP = {"colocated": {"step": 749, "gen": 321, "old_logprob": 88, "update": 286},
                 "separate": {"step": 520, "gen": 458, "old_logprob": 108, "update": 337}}
# verl docs/advance/fully_async.md ("Last updated: 10/18/2025"): colocated sync rows,
# Qwen2.5-Math-7B, DAPO, H20, max response 28K tokens: GPUs -> (step, gen, old_lp, update).
VERL_COLOCATED = {32: (790.10, 357.41, 107.71, 313.81), 64: (365.28, 150.72, 70.26, 133.41),
                  128: (356.30, 177.85, 53.92, 113.81)}
# OpenRLHF benchmark/README.md: Llama2-7B PPO on A800, "ray+vllm": generation 481.86 s,
# training 403.29 s, end to end 885.16 s; training TFLOPs per GPU 75.02 (ray+vllm) and
# 115.52 (DeepSpeed-Chat-like colocated run).
OPENRLHF_A800 = {"gen": 481.86, "train": 403.29, "e2e": 885.16, "tflops": (75.02, 115.52)}


def published_comparison(a: Assumptions = Assumptions()) -> list[list]:
    """Rows: what was published, what the simulator gives, the ratio sim/published."""
    rows = []
    c, s = VERL_ONE_STEP["colocated"], VERL_ONE_STEP["separate"]
    col = colocated_step({"gen": c["gen"], "old": c["old_logprob"], "upd": c["update"]},
                         {"gen": c["gen"]})
    rows.append(["verl one-step-off, colocated step (sum of phases)", c["step"], col.step_s])
    consumer = s["old_logprob"] + s["update"]
    sep = separate_step(s["gen"], consumer, 0.3, 4, 12, s["gen"], consumer)
    rows.append(["verl one-step-off, separate step (max + 0.3 s sync)", s["step"], sep.step_s])
    rows.append(["verl one-step-off, colocated/separate speed-up", round(c["step"] / s["step"], 2),
                 round(col.step_s / sep.step_s, 2)])
    for gpus, (step, gen, old, upd) in VERL_COLOCATED.items():
        rows.append([f"verl fully-async, colocated {gpus} x H20 step", step, gen + old + upd])
    h20, (_, lone) = GPUS["H20"], decode_rate(MODELS["7B"], GPUS["H20"], 1, 4096, a)
    rows.append(["verl 64/128 x H20 generation vs 28K-token latency floor",
                 "151 / 178", round(28 * 1024 * lone, 0)])
    rows.append(["verl NCCL weight sync, 7B (doc: mostly under)", 0.3,
                 round(sync_time("nccl_rank0", MODELS["7B"], h20, 8, 1, a), 2)])
    o = OPENRLHF_A800
    rows.append(["OpenRLHF A800 7B PPO end to end (gen + train)", o["e2e"], o["gen"] + o["train"]])
    for tflops in o["tflops"]:
        rows.append(["OpenRLHF A800 training MFU vs assumed", round(tflops / 312, 2), a.mfu])
    return [[r[0], r[1], r[2] if isinstance(r[2], str) else round(r[2], 2),
             _ratio(r[1], r[2])] for r in rows]


def _ratio(published, simulated) -> str:
    strings = isinstance(published, str) or isinstance(simulated, str)
    return "-" if strings else f"{simulated / published:.2f}"


def comparison_table(a: Assumptions = Assumptions()) -> str:
    return _table(["published figure", "published", "simulator", "sim / pub"],
                  published_comparison(a))


TABLES = {"memory": memory_table, "steps": step_table, "parts": parts_table,
          "sync": sync_table, "async": async_table, "published": comparison_table}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--table", choices=[*TABLES, "all"], default="all")
    args = parser.parse_args(argv)
    names = list(TABLES) if args.table == "all" else [args.table]
    for name in names:
        print(f"## {name}\n\n{TABLES[name]()}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
