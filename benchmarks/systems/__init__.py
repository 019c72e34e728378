"""Whole-system benchmarks: distributed training, the vLLM engine, the run viewer."""
