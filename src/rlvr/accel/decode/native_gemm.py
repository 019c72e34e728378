"""rlvr's native decode kernels (native/*.c): build once, load, call.

Two sources make one library: the decode GEMM (native/decode_gemm.c, called here) and
the whole decode step built on it (native/decode_step.c, called by
rlvr.accel.decode.native_step). The C sources ship with the package. On first use they are
compiled with the system C
compiler (`$CC`, else `cc`/`gcc`) as `-O3 -march=native -fopenmp` into the rlvr cache
($RLVR_CACHE or ~/.cache/rlvr, under native/), named by a hash of the source, the flags,
the compiler's version and the CPU's feature flags, so a new compiler, CPU or source
builds anew and a stale library is never loaded. The compile writes a temporary file
that is renamed into place, so concurrent first uses cannot load a half-written library.

OpenMP: the library needs `libgomp.so.1`. torch's CPU wheel loads its own copy under
that soname before this library is loaded (torch is imported first), so the dynamic
loader binds the kernel to the same runtime and thread pool as torch's own ops, and
the kernel runs on `torch.get_num_threads()` threads.

Without a compiler, when the build or the load fails, or with `RLVR_NATIVE_KERNELS=0`,
`load()` returns None (the reason goes to the debug log) and callers use torch's GEMMs.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import logging
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

import torch

from rlvr.models.resolve import cache_dir

log = logging.getLogger(__name__)

NATIVE = Path(__file__).parent / "native"
SOURCES = (NATIVE / "decode_gemm.c", NATIVE / "decode_step.c")
HEADERS = (NATIVE / "decode_gemm.h",)
FLAGS = ("-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "-std=c99")
# Rows per call the kernel takes (decode batches); more go to torch's GEMMs. Measured over
# SmolLM2's layer GEMMs (2 threads): native / oneDNN / MKL GFLOP/s were 110/62/54 at 16
# rows, 113/90/80 at 32, 85/90/92 at 48 and 73/96/99 at 64; a 4 x 8-sample decode ran
# 1.28x faster with 32 here than with 16 (benchmarks/RESULTS.md).
MAX_ROWS = 32
_ENV_SWITCH = "RLVR_NATIVE_KERNELS"


def enabled() -> bool:
    """False when the user switched native kernels off (RLVR_NATIVE_KERNELS=0)."""
    return os.environ.get(_ENV_SWITCH, "1").strip().lower() not in ("0", "false", "no", "off")


def compiler() -> str | None:
    """The C compiler to use: $CC when set, else the first of cc/gcc/clang on PATH."""
    if os.environ.get("CC"):
        return shutil.which(os.environ["CC"].split()[0])
    return next((path for name in ("cc", "gcc", "clang") if (path := shutil.which(name))), None)


def _cpu_flags() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            return next((line for line in info if line.startswith("flags")), "")
    except OSError:
        return platform.machine() + platform.processor()


def _library_path(cc: str) -> Path:
    version = subprocess.run([cc, "--version"], capture_output=True, text=True,
                             timeout=60).stdout
    texts = [path.read_text() for path in SOURCES + HEADERS]
    key = hashlib.sha256("\0".join([*texts, " ".join(FLAGS), version,
                                    _cpu_flags()]).encode()).hexdigest()[:16]
    return cache_dir() / "native" / f"rlvr-kernels-{key}.so"


def _build(cc: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(suffix=".so", dir=target.parent)
    os.close(handle)
    try:
        result = subprocess.run([cc, *FLAGS, f"-I{NATIVE}", "-o", temporary,
                                 *map(str, SOURCES), "-lm"],
                                capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            raise RuntimeError(f"{cc} failed on {NATIVE}: {result.stderr.strip()[-2000:]}")
        os.replace(temporary, target)  # atomic: readers see no library or a whole one
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


@functools.lru_cache(maxsize=1)
def _load_once() -> tuple[ctypes.CDLL | None, str]:
    """(the library, "") or (None, why it is off: recorded in rollout/path_reason)."""
    cc = compiler()
    if cc is None:
        log.debug("native decode GEMM off: no C compiler on PATH ($CC, cc, gcc, clang)")
        return None, "no C compiler ($CC, cc, gcc, clang)"
    try:
        path = _library_path(cc)
        if not path.exists():
            _build(cc, path)
        library = ctypes.CDLL(str(path))
    except (OSError, RuntimeError, subprocess.SubprocessError) as error:
        log.debug("native decode GEMM off: %s", error)
        return None, f"native kernels failed to build or load: {str(error)[:200]}"
    size = ctypes.c_ssize_t
    library.rlvr_decode_gemm.argtypes = [ctypes.c_void_p, size, ctypes.c_void_p,
                                         ctypes.c_void_p, ctypes.c_void_p, size,
                                         ctypes.c_int, size, size, ctypes.c_int]
    library.rlvr_decode_gemm.restype = None
    library.rlvr_decode_step.argtypes = [ctypes.c_void_p]
    library.rlvr_decode_step.restype = ctypes.c_int
    log.debug("native decode GEMM loaded from %s (%s)", path,
              "AVX2+FMA" if library.rlvr_decode_gemm_simd() else "plain C")
    return library, ""


def load() -> ctypes.CDLL | None:
    """The compiled kernel library, or None when it is switched off or cannot be built."""
    return _load_once()[0] if enabled() else None


def why_off() -> str:
    """Why `load()` gives no library ("" when it gives one); builds it if needed."""
    if not enabled():
        return f"{_ENV_SWITCH}={os.environ.get(_ENV_SWITCH, '').strip()}"
    return _load_once()[1]


def usable(weight: torch.Tensor) -> bool:
    """Whether the kernel can multiply by `weight` [N, K] (float32, CPU, contiguous)."""
    return (weight.device.type == "cpu" and weight.dtype == torch.float32
            and weight.dim() == 2 and weight.is_contiguous())


def decode_linear(library: ctypes.CDLL, x: torch.Tensor, weight: torch.Tensor,
                  bias: torch.Tensor | None, out: torch.Tensor | None = None) -> torch.Tensor:
    """x [M, K] @ weight[N, K].T + bias[N] -> [M, N] through the kernel. x: float32 on
    CPU with unit stride along K (rows may be strided); weight and bias contiguous.
    out: an [M, N] float32 view with unit column stride to write into (e.g. some columns
    of a wider output); a new tensor when None."""
    rows, inner = x.shape
    out_features = weight.shape[0]
    if x.stride(1) != 1 or x.stride(0) < inner:
        x = x.contiguous()
    if out is None:
        out = torch.empty(rows, out_features, dtype=torch.float32)  # [M, N]
    elif (out.shape != (rows, out_features) or out.dtype != torch.float32
          or out.stride(1) != 1 or out.stride(0) < out_features):
        raise ValueError(f"out must be a float32 [{rows}, {out_features}] view with unit "
                         f"column stride, got {out.dtype} {tuple(out.shape)} strides "
                         f"{out.stride()}")
    if rows == 0:
        return out
    row_stride = x.stride(0) if rows > 1 else inner
    library.rlvr_decode_gemm(x.data_ptr(), row_stride, weight.data_ptr(),
                             None if bias is None else bias.data_ptr(), out.data_ptr(),
                             out.stride(0) if rows > 1 else out_features, rows, out_features,
                             inner, torch.get_num_threads())
    return out
