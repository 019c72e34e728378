"""Micro-benchmarks of the CPU accelerators (rlvr.accel): decode GEMM, log-probs, packed
updates, rollout."""
