"""The cyclic garbage collector held off while a run loads what it keeps (`paused_collector`).

Preparing a run allocates hundreds of thousands of objects that live as long as the run: τ²'s modules,
a domain's catalog and validated database (airline: 25,000 records), the cassette's index. None of it
is garbage, yet the collector, which counts allocations, scans it again and again while it arrives
(each pass over everything still young, and full passes as the old generation grows): about 0.13 s
of CPU in a 2 s strict replay of τ²'s airline, 50 tasks x 4 trials. So `prepare` pauses it, and on the
way out hands every object still young to the oldest generation without a scan (a freeze and an
unfreeze at once: two list splices), where only a full collection looks at it. Nothing stays frozen
and nothing is lost: garbage made while paused is collected by the next full collection (or, in the
CLI's short process, frozen out of every scan with the rest of what a run loaded, cli/run_view.py).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_collector"]


@contextmanager
def paused_collector() -> Iterator[None]:
    """No collection inside; what was allocated inside leaves in the oldest generation, unscanned."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        # Left young, it would all be scanned by the collection the next allocation starts (the count
        # of allocations kept growing while paused). Skipped when objects are frozen already (serve
        # freezes what it loaded): unfreezing would hand theirs back to the collector too.
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if collecting:
            gc.enable()
