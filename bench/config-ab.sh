#!/usr/bin/env bash
# Times a graph's kernels as the heuristic configures them, then forced to each tile
# config given (a tuning record whose pick is that config, read with KILN_TUNE=use), all
# with `kiln run --bench` one after another, so that the figures compare like with like
# (the tuner's own sweep times each candidate briefly, while clocks settle). Every run
# also checks its outputs against the reference.
# Each run, and the sweep, stops after KILN_AB_TIMEOUT seconds (default 120).
#   usage: bench/config-ab.sh FILE.kiln 'CONFIG_JSON' ...
#   e.g.   bench/config-ab.sh bench/tune/gemm_f16_4096x4096x4096.kiln \
#            '{"schedule": "wgmma", "bm": 128, "bn": 256, "bk": 64, "warps_m": 2, "warps_n": 1, "stages": 4,
#              "group": 8, "split_k": 1, "cluster": 2}'
set -uo pipefail
cd "$(dirname "$0")/.."
file="$1"
shift
db="$(mktemp -d)/tuning.json"
limit="${KILN_AB_TIMEOUT:-120}"  # seconds each run and the sweep may take
run() {  # label, then the environment
  local label="$1"
  shift
  env "$@" timeout "$limit" build/bin/kiln run "$file" --bench > "$db.log" 2>&1
  [[ $? -eq 124 ]] && echo "$label: stopped after ${limit}s (a kernel that never ends hangs the GPU's queue)"
  echo "$label: $(grep -E '^compiled' "$db.log" | sed 's/.*(gemm, //; s/) for.*//' | head -n 1)"
  grep -E 'PASS|FAIL|rel_l2|^bench' "$db.log" | sed 's/^/  /'
}
run "heuristic" KILN_TUNE=off
# A record per kernel to overwrite: a one-second sweep writes them. Its candidates run,
# so a candidate that never ends would hold it: the limit stops it and says so.
if ! KILN_TUNE_DB="$db" timeout "$limit" build/bin/kiln tune "$file" --max-seconds 1 > /dev/null 2>&1 ||
  [[ ! -s "$db" ]]; then
  echo "config-ab: the one-second sweep that writes the records failed or was stopped after ${limit}s" >&2
  exit 1
fi
for config in "$@"; do
  python3 - "$db" "$config" <<'PY'
import json, sys
path, config = sys.argv[1], json.loads(sys.argv[2])
db = json.load(open(path))
for record in db["records"]:
    record["chosen"] = config
json.dump(db, open(path, "w"))
PY
  run "forced $config" KILN_TUNE=use KILN_TUNE_DB="$db"
done
