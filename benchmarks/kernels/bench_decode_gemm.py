"""The GEMMs of one decode step, streamed: rlvr's native kernel vs oneDNN vs `F.linear`.

One "step" multiplies x [rows, in] by every weight matrix of SmolLM2-135M-Instruct once,
in model order (per layer: fused qkv 960x576, o 576x576, fused gate_up 3072x576, down
576x1536; then lm_head 49152x576): ~540 MB of distinct float32 weights, far more than
the caches, so every step streams all of them from memory as a real decode step does.
Random weights of the real shapes (the speed does not depend on the values). Each path
holds its own copy in its own layout, built the way `DecodeLinear` builds it (the time
to build a snapshot is reported too). Rounds alternate the paths; the table gives the
median ms per step, the weight bytes streamed per second, and the ratio to oneDNN. A
prefill-sized call (--prefill-rows) is timed the same way: `DecodeLinear` sends those
rows to oneDNN on the native path's plain row-major copy.

With --model (anything rlvr.models.resolve_model takes), also the whole decode on that
model through rlvr's decode forward (FastLlama), native vs oneDNN GEMMs in alternating
rounds of one process: snapshot build, prefill of a --prompt-tokens prompt, and
--new decode steps of --rows rows (greedy; the tokens do not change the speed).

With --stream, instead, the C harness decode_gemm_stream.c (built here with the
kernel's own flags) streams the same step's GEMMs (q, k, v, o, gate, up, down unfused)
against a plain AVX2 read of the same bytes, and with --baseline REV against the
kernel as it was at git revision REV too, all alternating in one process: the floor
the kernel is measured against, without Python or torch in the loop.

    python -m benchmarks.kernels.bench_decode_gemm [--rows 8] [--rounds 7] [--threads 2]
    python -m benchmarks.kernels.bench_decode_gemm --stream --baseline main --rounds 15
    RLVR_CACHE=/tmp/rlvrcache python -m benchmarks.kernels.bench_decode_gemm \
        --model smollm2-135m-instruct --skip-gemms
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import torch

from rlvr.accel.decode import native_gemm
from rlvr.accel.decode.decode_linear import DecodeLinear, onednn_available

HIDDEN, INTERMEDIATE, VOCAB, LAYERS = 576, 1536, 49152, 30
SHAPES = [(960, HIDDEN), (HIDDEN, HIDDEN), (2 * INTERMEDIATE, HIDDEN),
          (HIDDEN, INTERMEDIATE)] * LAYERS + [(VOCAB, HIDDEN)]  # (out, in), model order


def build(weights: list[torch.Tensor], **path: bool) -> tuple[list[DecodeLinear], float]:
    start = time.perf_counter()
    layers = [DecodeLinear(w, **path) for w in weights]
    return layers, time.perf_counter() - start


def one_step(layers: list[DecodeLinear], inputs: dict[int, torch.Tensor]) -> float:
    start = time.perf_counter()
    for layer, (_, width) in zip(layers, SHAPES):
        layer(inputs[width])
    return time.perf_counter() - start


def time_decode(fast, rows: int, prompt_tokens: int, new: int) -> tuple[float, float, float]:
    """Seconds to (snapshot the weights, prefill one prompt, decode `new` tokens)."""
    ids = torch.arange(prompt_tokens)[None] * 7 % 1000 + 100  # [1, P]
    began = time.perf_counter()
    fast.release()
    fast._refresh()
    built = time.perf_counter()
    with torch.inference_mode():
        logits = fast.start(ids, torch.ones_like(ids), torch.arange(prompt_tokens)[None],
                            rows, new)  # [rows, V]
        prefilled = time.perf_counter()
        alive = torch.ones(rows, dtype=torch.bool)
        for _ in range(new):
            logits = fast.step(logits.argmax(-1), alive)
    return built - began, prefilled - built, time.perf_counter() - prefilled


def compare_decode(reference: str, args: argparse.Namespace) -> None:
    from transformers import AutoModelForCausalLM

    from rlvr.models import resolve_model
    from rlvr.accel.decode.fast_llama import FastLlama

    model = AutoModelForCausalLM.from_pretrained(resolve_model(reference),
                                                 dtype=torch.float32).eval()
    fast = FastLlama(model)
    switch = {"native": "1", "oneDNN": "0"}  # RLVR_NATIVE_KERNELS: oneDNN is the fallback
    times: dict[str, list[tuple[float, float, float]]] = {name: [] for name in switch}
    previous = os.environ.get("RLVR_NATIVE_KERNELS")
    try:
        for round_ in range(args.rounds + 1):
            for name, value in switch.items():
                os.environ["RLVR_NATIVE_KERNELS"] = value
                measured = time_decode(fast, args.rows, args.prompt_tokens, args.new)
                if round_:  # the first round warms up
                    times[name].append(measured)
    finally:
        os.environ.pop("RLVR_NATIVE_KERNELS", None)
        if previous is not None:
            os.environ["RLVR_NATIVE_KERNELS"] = previous
    print(f"\ndecode on {reference}: {args.rows} rows, prompt {args.prompt_tokens} tokens, "
          f"{args.new} new tokens, threads={args.threads}, rounds={args.rounds} (medians)")
    print(f"{'GEMMs':8s} {'snapshot ms':>12s} {'prefill ms':>11s} {'ms/token':>9s} "
          f"{'tokens/s':>9s} {'vs oneDNN':>10s}")
    peer = statistics.median(t[2] for t in times["oneDNN"])
    for name, rows in times.items():
        build, prefill, decode = (statistics.median(column) for column in zip(*rows))
        print(f"{name:8s} {build * 1e3:12.0f} {prefill * 1e3:11.0f} "
              f"{decode / args.new * 1e3:9.1f} {args.rows * args.new / decode:9.0f} "
              f"{peer / decode:9.2f}x")


def compare_gemms(args: argparse.Namespace) -> None:
    generator = torch.Generator().manual_seed(0)
    weights = [torch.randn(shape, generator=generator) / shape[1] ** 0.5 for shape in SHAPES]
    gigabytes = sum(w.numel() for w in weights) * 4 / 1e9
    paths = {"native": dict(use_native=True),
             "F.linear": dict(use_onednn=False, use_native=False)}
    if onednn_available():
        paths["oneDNN"] = dict(use_onednn=True)
    built = {name: build(weights, **path) for name, path in paths.items()}
    del weights  # each path keeps its own copy; the sources are not needed any more
    print(f"{len(SHAPES)} matrices, {gigabytes * 1e3:.0f} MB of float32 weights, "
          f"threads={args.threads}, rounds={args.rounds}")
    for rows in (args.rows, args.prefill_rows):
        inputs = {w: torch.randn(rows, w, generator=generator) for w in (HIDDEN, INTERMEDIATE)}
        times: dict[str, list[float]] = {name: [] for name in built}
        for name, (layers, _) in built.items():  # warm-up (first calls, page faults)
            one_step(layers, inputs)
        for _ in range(args.rounds):
            for name, (layers, _) in built.items():
                times[name].append(one_step(layers, inputs))
        peer = statistics.median(times.get("oneDNN", times["F.linear"]))
        print(f"\nrows={rows} ({'a decode step' if rows == args.rows else 'a prefill'})")
        print(f"{'path':10s} {'ms/step':>9s} {'GB/s':>7s} {'vs peer':>8s} {'best ms':>8s} "
              f"{'best GB/s':>10s} {'build ms':>9s}")
        for name, (_, build_seconds) in built.items():
            median, best = statistics.median(times[name]), min(times[name])
            print(f"{name:10s} {median * 1e3:9.1f} {gigabytes / median:7.1f} "
                  f"{peer / median:7.2f}x {best * 1e3:8.1f} {gigabytes / best:10.1f} "
                  f"{build_seconds * 1e3:9.0f}")


STREAM_HARNESS = Path(__file__).with_name("decode_gemm_stream.c")
KERNEL = Path(native_gemm.__file__).parent / "native" / "decode_gemm.c"  # the GEMM alone
C_FLAGS = ("-O3", "-march=native", "-fopenmp")  # the kernel's build flags, less -shared


def _compile_kernel(cc: str, source: Path, prefix: str, target: Path) -> Path:
    """The kernel as an object file, its exported names prefixed (test_, base_)."""
    renames = [f"-D{name}={prefix}_{name.removeprefix('rlvr_')}"
               for name in ("rlvr_decode_gemm", "rlvr_gemm_share", "rlvr_decode_gemm_simd")]
    subprocess.run([cc, *C_FLAGS, *renames, "-c", "-o", str(target), str(source)],
                   check=True, timeout=300)
    return target


def compare_stream(args: argparse.Namespace) -> None:
    """Build decode_gemm_stream.c with this tree's kernel (and --baseline's) and run it."""
    cc = native_gemm.compiler()
    if cc is None:
        raise SystemExit("--stream needs a C compiler ($CC, cc, gcc or clang)")
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        objects = [_compile_kernel(cc, KERNEL, "test", work / "kernel.o")]
        defines = []
        if args.baseline:
            relative = KERNEL.resolve().relative_to(_repo_root())
            baseline = work / "baseline.c"
            baseline.write_text(subprocess.run(
                ["git", "-C", str(_repo_root()), "show", f"{args.baseline}:{relative}"],
                check=True, capture_output=True, text=True, timeout=60).stdout)
            objects.append(_compile_kernel(cc, baseline, "base", work / "baseline.o"))
            defines.append("-DWITH_BASELINE")
        binary = work / "stream"
        subprocess.run([cc, *C_FLAGS, *defines, "-o", str(binary), str(STREAM_HARNESS),
                        *map(str, objects), "-lm"], check=True, timeout=300)
        command = [str(binary), str(args.rounds), str(args.rows), str(args.threads)]
        if args.shape >= 0:
            command.append(str(args.shape))
        print(subprocess.run(command, check=True, capture_output=True, text=True).stdout,
              end="")


def _repo_root() -> Path:
    return Path(subprocess.run(["git", "-C", str(KERNEL.parent), "rev-parse",
                                "--show-toplevel"], check=True, capture_output=True,
                               text=True, timeout=60).stdout.strip()).resolve()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=8, help="decode rows (samples) per call")
    parser.add_argument("--prefill-rows", type=int, default=96)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", default="", help="also time whole decodes on this model")
    parser.add_argument("--prompt-tokens", type=int, default=96)
    parser.add_argument("--new", type=int, default=32)
    parser.add_argument("--skip-gemms", action="store_true",
                        help="only the --model decode comparison")
    parser.add_argument("--stream", action="store_true",
                        help="only the C harness: kernel vs a plain read of the weights")
    parser.add_argument("--baseline", default="",
                        help="with --stream: also the kernel at this git revision")
    parser.add_argument("--shape", type=int, default=-1,
                        help="with --stream: only one projection (0..7: q k v o gate up "
                             "down lm_head)")
    args = parser.parse_args()
    if args.stream:
        compare_stream(args)
        return 0
    torch.set_num_threads(args.threads)
    if native_gemm.load() is None:
        raise SystemExit("the native kernel did not build here (no C compiler, or "
                         "RLVR_NATIVE_KERNELS=0); nothing to compare")
    if not args.skip_gemms:
        compare_gemms(args)
    if args.model:
        compare_decode(args.model, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
