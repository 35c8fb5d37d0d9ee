"""Workflows that combine runs and reports: bisecting configs, checking a domain pack."""
