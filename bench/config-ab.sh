#!/usr/bin/env bash
# Times a graph's kernels as the heuristic configures them, then forced to each tile
# config given (a tuning record whose pick is that config, read with KILN_TUNE=use), all
# with `kiln run --bench` one after another, so that the figures compare like with like
# (the tuner's own sweep times each candidate briefly, while clocks settle). Every run
# also checks its outputs against the reference.
#   usage: bench/config-ab.sh FILE.kiln 'CONFIG_JSON' ...
#   e.g.   bench/config-ab.sh bench/tune/gemm_f16_4096x4096x4096.kiln \
#            '{"schedule": "wgmma", "bm": 128, "bn": 256, "bk": 64, "warps_m": 2, "warps_n": 1, "stages": 4,
#              "group": 8, "split_k": 1, "cluster": 2}'
set -uo pipefail
cd "$(dirname "$0")/.."
file="$1"
shift
db="$(mktemp -d)/tuning.json"
run() {  # label, then the environment
  local label="$1"
  shift
  env "$@" build/bin/kiln run "$file" --bench > "$db.log" 2>&1
  echo "$label: $(grep -E '^compiled' "$db.log" | sed 's/.*(gemm, //; s/) for.*//' | head -n 1)"
  grep -E 'PASS|FAIL|rel_l2|^bench' "$db.log" | sed 's/^/  /'
}
run "heuristic" KILN_TUNE=off
# A record per kernel to overwrite: a one-second sweep writes them.
KILN_TUNE_DB="$db" build/bin/kiln tune "$file" --max-seconds 1 > /dev/null 2>&1
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
