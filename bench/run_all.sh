#!/usr/bin/env bash
# Run every benchmark of bench/README.md one after another (never in parallel: they time each other
# otherwise), keep each full output, and print the RATIO lines at the end.
#
#   bash bench/run_all.sh                 (about 35 min on 2 busy cores; from the repository root)
#
# PYTHON   the venv's interpreter (default .venv/bin/python)
# PEER_VENV the τ²-bench venv for peer_tau2_cache.py (default /tmp/peer; the script skips without it)
# OUT      where the outputs go (default: a new temp directory)
set -u
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
PEER_VENV=${PEER_VENV:-/tmp/peer}
OUT=${OUT:-$(mktemp -d /tmp/tauproxy-bench-XXXXXX)}
mkdir -p "$OUT"
echo "outputs in $OUT"

status=0
run() {
    local name=$1
    shift
    echo "== $name ($(date +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"
    if ! "$PYTHON" "bench/$name.py" "$@" >"$OUT/$name.txt" 2>&1; then
        echo "   $name FAILED (see $OUT/$name.txt)"
        status=1
    fi
    grep '^RATIO' "$OUT/$name.txt" | tail -1
}

run floors
run state_reset
run pack_speed
run cli_start
run cassette_size
run estimate_error
run replay_speed
run peer_tau2_cache --peer-venv "$PEER_VENV"
run profile_replay
run peer_tau2_profile --peer-venv "$PEER_VENV"

echo
echo "== summary"
cat "$OUT"/*.txt | grep '^RATIO'
exit $status
