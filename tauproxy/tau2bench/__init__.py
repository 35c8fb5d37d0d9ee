"""τ²-bench's own domains in tauproxy's runner: its engine in-process, its model calls through ours (bridge.py)."""
