"""`python benchmarks/bench_tools.py [args]` = `python -m benchmarks.headline.bench_tools [args]` (benchmarks/_entry.py)."""
if __name__ == "__main__":
    __import__("_entry").run("benchmarks.headline.bench_tools")
