"""The native decode step (rlvr.accel.decode.native_step, native/decode_step.c) computes what
FastLlama's torch step computes: the same logits and, when activations are kept, the
same GEMM outputs in the capture (the replay's inputs); the same bits on any number of
threads; and it steps aside (torch's step runs) where it does not apply. Logits against
transformers, on both paths, are in test_fast_llama.py."""

from __future__ import annotations

import pytest
import torch

from rlvr.accel.decode import native_gemm
from rlvr.accel.decode.capture import SLOTS
from rlvr.accel.decode.fast_llama import FastLlama
from rlvr.accel.decode.native_step import NativeStep
from test_fast_llama import MODELS, _left_padded, _llama

pytestmark = pytest.mark.skipif(native_gemm.load() is None,
                                reason="native kernels unavailable (no C compiler on PATH or "
                                       "RLVR_NATIVE_KERNELS=0)")
PROMPTS = [[5, 9, 13, 2, 7, 30], [11, 4], [8, 8, 40, 1]]


def _decode(model, steps: int, keep_activations: bool = False, n: int = 2,
            drop_at: int | None = 1):
    """Prefill PROMPTS (n samples each), then `steps` decode steps on fixed tokens, dropping
    rows 1 and 4 at step `drop_at`. Returns (FastLlama, [logits of each step])."""
    fast = FastLlama(model)
    fast.start(*_left_padded(PROMPTS), n=n, max_new_tokens=steps + 1,
               keep_activations=keep_activations)
    generator, rows, out = torch.Generator().manual_seed(1), len(PROMPTS) * n, []
    for step in range(steps):
        if step == drop_at:
            keep = torch.tensor([r for r in range(rows) if r not in (1, 4)])
            fast.keep(keep)
            rows = len(keep)
        token = torch.randint(0, 61, (rows,), generator=generator)
        alive = torch.ones(rows, dtype=torch.bool)
        alive[0] = step != 2  # one padding column, masked for the rest of the row
        out.append(fast.step(token, alive).clone())
    return fast, out


@pytest.fixture
def torch_step(monkeypatch):
    """Run FastLlama's torch decode step: NativeStep never binds."""
    def use_torch():
        monkeypatch.setattr(NativeStep, "bind", classmethod(lambda cls, *a, **kw: None))
    return use_torch


@pytest.mark.parametrize("name", MODELS)
def test_native_step_logits_and_kept_outputs_match_torch_step(name, torch_step):
    model = MODELS[name]()
    native, native_logits = _decode(model, 4, keep_activations=True)
    assert native._native is not None
    torch_step()
    reference, reference_logits = _decode(model, 4, keep_activations=True)
    assert reference._native is None
    for a, b in zip(native_logits, reference_logits):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    kept, expected = native.capture, reference.capture
    used = kept._next_pool  # pool rows written: the prefill's, then each step's live rows
    assert used == expected._next_pool > len(PROMPTS) * kept.shape.prompt_width
    for layer_kept, layer_expected in zip(kept.outputs, expected.outputs):
        for slot in SLOTS:
            torch.testing.assert_close(layer_kept[slot][:used], layer_expected[slot][:used],
                                       rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(kept.logits[:kept._next_logit],
                               expected.logits[:expected._next_logit], rtol=1e-5, atol=1e-5)
    assert torch.equal(kept.token_pool, expected.token_pool)


def test_same_bits_on_any_number_of_threads():
    """Threads split output columns (and attention's (row, head) pairs); each value is
    computed whole by one thread in one order, so the thread count changes no bit."""
    model = _llama()
    threads = torch.get_num_threads()
    results = []
    try:
        for count in (1, 2, 3):
            torch.set_num_threads(count)
            results.append(_decode(model, 3)[1])
    finally:
        torch.set_num_threads(threads)
    for other in results[1:]:
        assert all(torch.equal(a, b) for a, b in zip(results[0], other))


def test_torch_step_runs_where_the_native_step_does_not_apply(monkeypatch):
    """More rows than the native GEMM is meant for go through torch's step (whose GEMMs
    use oneDNN at that size); up to that many, the native step runs."""
    calls = []
    original = NativeStep.run
    monkeypatch.setattr(NativeStep, "run", lambda self, *a: calls.append(1) or original(self, *a))
    model = _llama()
    fast = FastLlama(model)
    wide = native_gemm.MAX_ROWS + 1
    fast.start(*_left_padded([[3, 4, 5]]), n=wide, max_new_tokens=2)
    fast.step(torch.arange(wide) % 61, torch.ones(wide, dtype=torch.bool))
    assert calls == []
    fast.keep(torch.arange(native_gemm.MAX_ROWS))
    fast.step(torch.arange(native_gemm.MAX_ROWS) % 61,
              torch.ones(native_gemm.MAX_ROWS, dtype=torch.bool))
    assert calls == [1]


def test_binds_only_float32_weights():
    double = FastLlama(_llama().double())
    double.start(*_left_padded([[3, 4, 5]]), n=1, max_new_tokens=1)
    assert double._native is None
    single = FastLlama(_llama())
    single.start(*_left_padded([[3, 4, 5]]), n=1, max_new_tokens=1)
    assert single._native is not None


def test_refuses_shapes_the_c_code_would_misread():
    """The C code trusts its pointers: a rotary table narrower than head_dim (a partial
    rotary embedding) or a key buffer too short for the column is refused up front."""
    fast = FastLlama(_llama())
    fast.start(*_left_padded([[3, 4, 5]]), n=2, max_new_tokens=2)
    head_dim, hidden = fast.head_dim, fast.base.config.hidden_size
    stream, logits = torch.zeros(2, hidden), torch.empty(2, 61)
    cos = sin = torch.ones(2, head_dim)
    run = lambda **kw: fast._native.run(**{  # noqa: E731
        "stream": stream, "cos": cos, "sin": sin, "keys": fast.keys, "values": fast.values,
        "valid": fast.valid, "column": fast.length, "outputs": None, "logits": logits, **kw})
    run()  # well-formed: runs
    with pytest.raises(ValueError, match="cos must be contiguous float32"):
        run(cos=torch.ones(2, head_dim // 2))
    with pytest.raises(ValueError, match="keys must be float32"):
        run(column=fast.keys.shape[3])
    with pytest.raises(ValueError, match="valid must be bool"):
        run(valid=fast.valid.float())
