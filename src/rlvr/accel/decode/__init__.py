"""The CPU fast decode for Llama-family models and its native kernels (see rlvr.accel)."""
