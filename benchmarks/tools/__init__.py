"""Helpers the benchmarks and tests import (phase meter, serve cases, hacking report,
scaling model) and one-off tools."""
