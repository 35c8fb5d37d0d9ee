"""The runner: tasks x trials, concurrency, resumable results on disk."""
