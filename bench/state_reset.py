"""Cost of a fresh domain state per trial: copy-on-write `fresh()` versus a deep copy of the whole DB.

    .venv/bin/python bench/state_reset.py             (about 1 min)

For every installed domain pack at its default DB size (mock, airline, retail, telecom):
- ours: `pack.base_state.fresh()` alone, and `Environment(pack, task)` (which takes a fresh state and
  applies the task's initialization data and actions), cycling through the pack's tasks; each timed
  one call at a time, median over --reps (default 1000).
- theirs: `copy.deepcopy(db)` of the DB materialised once as plain dicts (`fresh().to_dict()`), the
  per-trial cost of a runner that deep-copies its starting DB; median over up to --reps calls or
  --budget seconds per domain, whichever ends first (at least 20 calls).
- for information: `fresh().to_dict()`, i.e. touching every record, the most a trial could ever
  pay under copy-on-write (a trial reads a handful of records; each first read is one json.loads),
  and `State.sha256()` after one write per table: the DB check's hash of a trial's end state, where
  copy-on-write pays for the whole DB once per trial (untouched tables reuse cached text).
Prints the raw numbers, then one RATIO line for the domain where ours is slowest: ours / theirs.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json

from _common import median, per_call, print_machine


def written_state(base, db):
    """A fresh state with one record rewritten in every table, as a trial that writes leaves it."""
    state = base.fresh()
    for table, records in db.items():
        if records:
            rid = next(iter(records))
            state.table(table).put(rid, {**records[rid], "_bench": 1} if isinstance(records[rid], dict) else 1)
    return state


def measure(pack, args, environment) -> dict:
    base = pack.base_state
    tasks = pack.tasks
    db = base.fresh().to_dict()
    records = sum(len(table) for table in db.values())
    fresh = per_call(lambda i: base.fresh(), args.reps)
    env = per_call(lambda i: environment(pack, tasks[i % len(tasks)]), args.reps)
    gc.collect()
    deep = per_call(lambda i: copy.deepcopy(db), args.reps, args.budget)
    touch_all = per_call(lambda i: base.fresh().to_dict(), min(args.reps, 50), args.budget / 2, min_reps=5)
    hashed = per_call(lambda i: written_state(base, db).sha256(), min(args.reps, 50), args.budget / 2, min_reps=5)
    return {
        "domain": pack.name,
        "records": records,
        "db_bytes": len(json.dumps(db)),
        "tasks": len(tasks),
        "fresh_us": median(fresh) * 1e6,
        "fresh_n": len(fresh),
        "env_us": median(env) * 1e6,
        "env_p99_us": sorted(env)[int(0.99 * (len(env) - 1))] * 1e6,
        "env_n": len(env),
        "deepcopy_ms": median(deep) * 1e3,
        "deepcopy_n": len(deep),
        "touch_all_ms": median(touch_all) * 1e3,
        "touch_all_n": len(touch_all),
        "sha256_after_write_ms": median(hashed) * 1e3,
        "sha256_n": len(hashed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--budget", type=float, default=10.0, help="seconds per domain for the deep copies")
    args = parser.parse_args()

    from tauproxy.domain.pack import available_domains, load_pack
    from tauproxy.engine.environment import Environment

    print_machine("state_reset")
    rows = []
    for domain in available_domains():
        row = measure(load_pack(domain), args, Environment)
        rows.append(row)
        print(
            f"{domain:8s} {row['records']:6d} records {row['db_bytes'] / 1e6:6.2f} MB JSON | "
            f"fresh() {row['fresh_us']:7.2f} us (n={row['fresh_n']}) | "
            f"fresh+Environment(pack, task) {row['env_us']:8.2f} us (p99 {row['env_p99_us']:.1f} us, "
            f"n={row['env_n']}, {row['tasks']} tasks cycled) | "
            f"deepcopy {row['deepcopy_ms']:8.3f} ms (n={row['deepcopy_n']}) | "
            f"to_dict (touch all) {row['touch_all_ms']:8.3f} ms (n={row['touch_all_n']}) | "
            f"sha256 after 1 write {row['sha256_after_write_ms']:8.3f} ms (n={row['sha256_n']}) | "
            f"ours/deepcopy {row['env_us'] / 1e3 / row['deepcopy_ms']:.2e}",
            flush=True,
        )

    worst = max(rows, key=lambda r: r["env_us"])
    ok = all(r["env_us"] < 5000 for r in rows)
    print(json.dumps(rows))
    print(
        f"RATIO state_reset: ours/theirs = {worst['env_us'] / 1e3 / worst['deepcopy_ms']:.5f} (goal: fresh state + "
        f"Environment < 5 ms in every domain: {'PASS' if ok else 'FAIL'}; slowest domain {worst['domain']}: "
        f"ours {worst['env_us']:.1f} us vs deepcopy {worst['deepcopy_ms']:.3f} ms)"
    )


if __name__ == "__main__":
    main()
