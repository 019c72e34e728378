"""rlvr's native decode GEMM (rlvr.accel.decode.native_gemm, native/decode_gemm.c) computes
x @ W.T + b as a float64 reference does, to float32 accumulation error, for every row
count it takes and shapes that fill no tile evenly; DecodeLinear gives the same result
through it, through its fallback (RLVR_NATIVE_KERNELS=0) and for prefill-sized calls;
a failed build falls back silently; the library shares torch's OpenMP runtime."""

from __future__ import annotations

import ctypes
import json
import logging
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from rlvr.accel.decode import native_gemm
from rlvr.accel.decode.decode_linear import DecodeLinear, StackedDecodeLinear, fused

pytestmark = pytest.mark.skipif(native_gemm.compiler() is None,
                                reason="no C compiler on PATH to build the native kernel")

EPS32 = torch.finfo(torch.float32).eps


@pytest.fixture(scope="module")
def library():
    lib = native_gemm.load()
    assert lib is not None, "a compiler exists, so the kernel must build and load"
    return lib


def _assert_float32_close(y: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                          bias: torch.Tensor | None) -> None:
    """|y - exact| within the worst-case float32 accumulation error of K products."""
    x64, w64 = x.double(), weight.double()
    exact = x64 @ w64.T + (0 if bias is None else bias.double())
    magnitude = x64.abs() @ w64.abs().T + (0 if bias is None else bias.double().abs())
    bound = (x.shape[-1] + 2) * EPS32 * magnitude + 1e-30
    excess = ((y.double() - exact).abs() - bound).max().item()
    assert excess <= 0, f"error exceeds the float32 bound by {excess}"


@pytest.mark.parametrize("out_features,in_features", [(1, 1), (29, 33), (70, 577), (13, 1539)])
def test_kernel_matches_float64_reference(library, out_features, in_features):
    generator = torch.Generator().manual_seed(out_features * 10007 + in_features)
    weight = torch.randn(out_features, in_features, generator=generator)
    bias = torch.randn(out_features, generator=generator)
    threads = torch.get_num_threads()
    try:
        for count in (1, 2, 3):
            torch.set_num_threads(count)
            for rows in range(1, native_gemm.MAX_ROWS + 1):
                x = torch.randn(rows, in_features, generator=generator)
                for b in (bias, None):
                    y = native_gemm.decode_linear(library, x, weight, b)
                    _assert_float32_close(y, x, weight, b)
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("in_features", [1, 7, 8, 9, 17, 2000])
def test_every_tile_shape_and_k_tail(library, in_features):
    """Every tile the kernel dispatches (passes of 1-4 rows of x against 1-8 rows of w,
    the last group of w's rows short) at K below, at and past one vector of 8, and at a
    K long enough to be cut into chunks (2000: x rows past the chunk budget at every row
    count); strided rows of x and y, written into a wider output's columns."""
    generator = torch.Generator().manual_seed(in_features)
    threads = torch.get_num_threads()
    try:
        for count in (1, 2):
            torch.set_num_threads(count)
            for out_features in range(1, 10):
                weight = torch.randn(out_features, in_features, generator=generator)
                bias = torch.randn(out_features, generator=generator)
                for rows in range(1, native_gemm.MAX_ROWS + 1):
                    x = torch.randn(rows, in_features + 3, generator=generator)[:, 1:-2]
                    wide = torch.full((rows, out_features + 5), float("nan"))
                    y = native_gemm.decode_linear(library, x, weight, bias,
                                                  out=wide[:, 2:2 + out_features])
                    _assert_float32_close(y, x, weight, bias)
                    assert wide[:, :2].isnan().all() and wide[:, 2 + out_features:].isnan().all()
    finally:
        torch.set_num_threads(threads)


def test_thread_shares_cover_every_column_once(library):
    """rlvr_gemm_share(t, nt), called here one share at a time, writes disjoint column
    ranges that together are the whole product, for row counts that take 1 to 4 passes."""
    share = library.rlvr_gemm_share
    size = ctypes.c_ssize_t
    share.argtypes = [ctypes.c_void_p, size, ctypes.c_void_p, ctypes.c_void_p,
                      ctypes.c_void_p, size, ctypes.c_int, size, size, ctypes.c_int,
                      ctypes.c_int]
    share.restype = None
    generator = torch.Generator().manual_seed(5)
    out_features, in_features = 47, 1541
    weight = torch.randn(out_features, in_features, generator=generator)
    bias = torch.randn(out_features, generator=generator)
    for rows, shares in ((1, 2), (5, 3), (8, 2), (16, 7)):
        x = torch.randn(rows, in_features, generator=generator)
        written = []
        for t in range(shares):
            y = torch.full((rows, out_features), float("nan"))
            share(x.data_ptr(), in_features, weight.data_ptr(), bias.data_ptr(), y.data_ptr(),
                  out_features, rows, out_features, in_features, t, shares)
            columns = ~y.isnan().all(0)  # [N]: the columns this share wrote
            assert not y[:, columns].isnan().any()
            written.append(columns)
            _assert_float32_close(y[:, columns], x, weight[columns], bias[columns])
        assert (torch.stack(written).sum(0) == 1).all(), "a column written twice or never"


def test_kernel_reads_strided_and_noncontiguous_rows(library):
    generator = torch.Generator().manual_seed(1)
    weight, bias = torch.randn(37, 45, generator=generator), torch.randn(37, generator=generator)
    wide = torch.randn(6, 50, generator=generator)
    strided = wide[:, 2:47]  # rows 50 floats apart: read in place
    transposed = torch.randn(45, 6, generator=generator).T  # unit stride along rows: copied
    for x in (strided, transposed, wide[2:3, :45]):
        _assert_float32_close(native_gemm.decode_linear(library, x, weight, bias), x, weight, bias)


def test_decode_linear_native_fallback_and_prefill_agree(library, monkeypatch):
    generator = torch.Generator().manual_seed(2)
    weight, bias = torch.randn(101, 67, generator=generator), torch.randn(101, generator=generator)
    native = DecodeLinear(weight, bias)
    assert native.native is library
    monkeypatch.setenv("RLVR_NATIVE_KERNELS", "0")
    fallback = DecodeLinear(weight, bias)
    assert fallback.native is None
    with pytest.raises(RuntimeError, match="native decode GEMM is unavailable"):
        DecodeLinear(weight, bias, use_native=True)
    for shape in ((1, 67), (8, 1, 67), (3, 5, 67), (2, 40, 67)):  # 40 rows and more: F.linear
        x = torch.randn(shape, generator=generator)
        y = native(x)
        assert y.shape == (*shape[:-1], 101)
        torch.testing.assert_close(y, fallback(x), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(y, F.linear(x, weight, bias), rtol=1e-5, atol=1e-5)


def test_snapshot_ignores_later_source_updates(library):
    weight = torch.randn(20, 16)
    layer = DecodeLinear(weight)
    x = torch.randn(4, 16)
    weight.add_(1.0)
    torch.testing.assert_close(layer(x), x @ (weight - 1.0).T, rtol=1e-5, atol=1e-5)


def test_fused_weight_is_taken_over_and_others_are_copied(library):
    first, second = torch.randn(5, 8), torch.randn(3, 8)
    weight = fused(first, second)
    layer = DecodeLinear(weight)
    assert layer.weight.data_ptr() == weight.data_ptr()  # no second copy of a fresh tensor
    again = DecodeLinear(weight)  # the same tensor handed over twice: the second copies
    assert again.weight.data_ptr() != weight.data_ptr()
    assert DecodeLinear(first).weight.data_ptr() != first.data_ptr()
    x = torch.randn(2, 8)
    torch.testing.assert_close(layer(x), x @ torch.cat([first, second]).T, rtol=1e-5, atol=1e-5)


def test_borrowed_weight_is_read_where_it_lives(library):
    weight, bias = torch.randn(7, 12), torch.randn(7)
    layer = DecodeLinear(weight, bias, borrow=True)
    assert layer.weight.data_ptr() == weight.data_ptr()
    x = torch.randn(3, 12)
    _assert_float32_close(layer(x), x, weight, bias)


@pytest.mark.parametrize("with_bias", [True, False])
def test_stacked_pieces_equal_the_fused_product(library, with_bias):
    """q|k|v-like pieces written into one output's columns: the fused product, for decode
    rows (native kernel, weights borrowed) and for a prefill (more rows than the kernel
    takes), and the same as the fused fallback where the kernel is off."""
    generator = torch.Generator().manual_seed(3)
    weights = [torch.randn(n, 40, generator=generator) for n in (24, 8, 8)]
    biases = [torch.randn(n, generator=generator) if with_bias else None for n in (24, 8, 8)]
    whole = torch.cat(weights)  # [40, 40]
    whole_bias = torch.cat(biases) if with_bias else None
    stacked = StackedDecodeLinear(weights, biases)
    assert stacked.whole is None
    assert [p.weight.data_ptr() for p in stacked.pieces] == [w.data_ptr() for w in weights]
    for rows in (1, 5, native_gemm.MAX_ROWS, native_gemm.MAX_ROWS + 9):
        x = torch.randn(2, rows, 40, generator=generator)[1]  # a strided row block
        y = stacked(x)
        assert y.shape == (rows, 40)
        _assert_float32_close(y, x, whole, whole_bias)


def test_stacked_falls_back_to_one_fused_copy(monkeypatch):
    monkeypatch.setenv("RLVR_NATIVE_KERNELS", "0")
    weights = [torch.randn(6, 10), torch.randn(4, 10)]
    stacked = StackedDecodeLinear(weights, [None, None])
    assert stacked.whole is not None and not stacked.pieces
    x = torch.randn(3, 10)
    torch.testing.assert_close(stacked(x), x @ torch.cat(weights).T, rtol=1e-5, atol=1e-5)


def test_output_view_is_checked(library):
    x, weight = torch.randn(2, 6), torch.randn(4, 6)
    with pytest.raises(ValueError, match="unit column stride"):
        native_gemm.decode_linear(library, x, weight, None, out=torch.empty(4, 2).T)


def test_failed_build_falls_back_with_a_debug_log(monkeypatch, tmp_path, caplog):
    failing = tmp_path / "failing-cc"
    failing.write_text("#!/bin/sh\necho 'cc: cannot compile' >&2\nexit 1\n")
    failing.chmod(0o755)
    monkeypatch.setenv("CC", str(failing))
    monkeypatch.setenv("RLVR_CACHE", str(tmp_path / "cache"))
    native_gemm._load_once.cache_clear()
    try:
        with caplog.at_level(logging.DEBUG, logger="rlvr.accel.decode.native_gemm"):
            assert native_gemm.load() is None
        assert "cannot compile" in caplog.text
        assert DecodeLinear(torch.randn(3, 4)).native is None
        assert not list((tmp_path / "cache" / "native").iterdir())  # no half-written file
    finally:
        native_gemm._load_once.cache_clear()


def test_build_is_cached_by_key_and_reused(monkeypatch, tmp_path):
    monkeypatch.setenv("RLVR_CACHE", str(tmp_path))
    native_gemm._load_once.cache_clear()
    try:
        assert native_gemm.load() is not None
        built = list((tmp_path / "native").iterdir())
        assert len(built) == 1 and built[0].name.startswith("rlvr-kernels-")
        stamp = built[0].stat().st_mtime_ns
        native_gemm._load_once.cache_clear()
        assert native_gemm.load() is not None
        assert [p.stat().st_mtime_ns for p in (tmp_path / "native").iterdir()] == [stamp]
    finally:
        native_gemm._load_once.cache_clear()


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux /proc")
def test_kernel_shares_torchs_openmp_runtime(library):
    # In a fresh process: this one may hold other libraries' runtimes by now (an earlier
    # test's import of scikit-learn brings its own libgomp), which says nothing of ours.
    script = ("import torch\nfrom rlvr.accel.decode import native_gemm\n"
              "assert native_gemm.load() is not None\n"
              "import json\n"
              "print(json.dumps(sorted({l.split()[-1] for l in open('/proc/self/maps') "
              "if 'libgomp' in l})))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(native_gemm.__file__).parents[2]), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    runtimes = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(runtimes) == 1, f"more than one OpenMP runtime loaded: {runtimes}"


def test_plain_c_build_without_avx2_matches(tmp_path):
    """The portable loop a CPU without AVX2+FMA gets (built here for baseline x86-64 or
    the compiler's default target) computes the same sums."""
    target = ["-march=x86-64"] if platform.machine() in ("x86_64", "AMD64") else []
    library_path = tmp_path / "plain.so"
    subprocess.run([native_gemm.compiler(), "-O2", *target, "-fopenmp", "-fPIC", "-shared",
                    "-o", str(library_path), str(native_gemm.SOURCES[0])], check=True,
                   timeout=300)
    plain = ctypes.CDLL(str(library_path))
    assert plain.rlvr_decode_gemm_simd() == 0
    plain.rlvr_decode_gemm.argtypes = native_gemm.load().rlvr_decode_gemm.argtypes
    generator = torch.Generator().manual_seed(3)
    weight, bias = torch.randn(19, 21, generator=generator), torch.randn(19, generator=generator)
    for rows in (1, 7, 16):
        x = torch.randn(rows, 21, generator=generator)
        _assert_float32_close(native_gemm.decode_linear(plain, x, weight, bias), x, weight, bias)
