"""`python benchmarks/bench_learning.py [args]` = `python -m benchmarks.headline.bench_learning [args]` (benchmarks/_entry.py)."""
if __name__ == "__main__":
    __import__("_entry").run("benchmarks.headline.bench_learning")
