"""Domain sources: where a run's domain comes from, behind one protocol (protocol.py).

tauproxy's own packs (packs.py) and τ²-bench's domains (tau2.py) are the built-in sources; a third
registers itself by name (registry.py). The runner, its executors, the reports and the CLI ask the
registry for a domain's source and never look at which one it is.
"""
