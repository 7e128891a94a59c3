"""Benchmarks: each script measures something and writes its section of BENCHMARKS.md."""
