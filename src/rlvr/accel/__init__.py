"""rlvr's opt-in CPU accelerators: the same numbers as the plain paths, faster.

Nothing here is needed to follow one GRPO step; the plain paths are
rlvr.rollout.hf (transformers' decode), rlvr.update_paths (the plain update forward
and the seam that picks a path) and rlvr.training.reference_step. Each fast path is
chosen once per run and recorded, with why a faster one was not taken, as
`rollout/path` and `update/path` on every metrics line and in summary.json.

  decode/  rlvr's decode-only Llama forward (fast_llama.py), its GEMMs (decode_linear.py),
           the native C kernels (native/, native_gemm.py, native_step.py), the rotary
           form it shares with the update (rotary.py) and the kept activations
           (capture.py).
  update/  the update's faster exact forwards: each group's prompt once
           (shared_prefix.py), attention over only the allowed pairs (tree_attention.py),
           and the forward replayed from the sampler's kept activations (replay.py,
           replay_layers.py).

The equality tests (tests/test_fast_llama.py, test_native_*.py, test_replay.py,
test_shared_prefix.py, test_update_paths.py) compare each with the plain path.
"""
