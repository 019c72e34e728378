"""Headline comparisons: rlvr against TRL (throughput, time-to-accuracy), the default
run, reward hacking."""
