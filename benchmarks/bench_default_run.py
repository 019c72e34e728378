"""`python benchmarks/bench_default_run.py [args]` = `python -m benchmarks.headline.bench_default_run [args]` (benchmarks/_entry.py)."""
if __name__ == "__main__":
    __import__("_entry").run("benchmarks.headline.bench_default_run")
