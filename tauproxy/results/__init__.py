"""Run directories: the on-disk format of a run (run.json, simulations.jsonl, results.json).

Below both the runner (which writes them) and the reports (which read them).
"""
