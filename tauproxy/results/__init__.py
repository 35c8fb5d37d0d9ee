"""Runs on disk and the one way to read them: run directories (run.json, simulations.jsonl,
results.json), τ²-bench's simulations files, and the serve run log joined onto either.

Below both the runner (which writes runs and reads history) and the reports (which read them).
"""
