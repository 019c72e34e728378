"""`python benchmarks/bench_redteam_sandbox.py [args]` = `python -m benchmarks.redteam.bench_redteam_sandbox [args]` (benchmarks/_entry.py)."""
if __name__ == "__main__":
    __import__("_entry").run("benchmarks.redteam.bench_redteam_sandbox")
