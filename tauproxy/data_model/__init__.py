"""Pydantic models at every boundary: messages, tools, tasks, model calls and results.

Field names follow tau2-bench wherever it has them, so tasks and results interoperate.
"""
