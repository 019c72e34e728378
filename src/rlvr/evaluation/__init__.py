"""Benchmarks and held-out evaluation: dataset loaders, pass@k and maj@k, the
`rlvr eval` runner.

Its modules: datasets (published files as task records), metrics (pure functions over
verdicts), runner and report (`rlvr eval`), held_out (one evaluation during training).
"""
