#!/usr/bin/env bash
# Decoding's quantised products on the GPU machine over a build made elsewhere (build/bin,
# build/tests): bench/peers.py's cuBLAS (on the weight dequantised beforehand), torch's int4
# kernel and torch.compile of dequantise + linear, then `kiln bench quant_w4g128 quant_w8`
# (each default kernel checked against the reference) with those peers merged, in the same
# run; then the group-size sweep, `kiln run --bench` of each graph of bench/cases/quant (per
# row, groups of 32 to 128, bf16 and i4 zero points, two rows, i8), each checked against
# the reference and timed in a CUDA graph; then the quantised GPU tests. The figures come
# first so that a run cut short at the call's limit still has them. Logs go to the folder
# given (default out/quant), and all of them into one archive beside it, LOG_DIR.tgz.
#   usage: bench/quant-run.sh [LOG_DIR]
#   PEER_IMPLS (default cublas,int4pack,compile) chooses the peers; FIGURES_ONLY=1 stops
#   before the tests.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-out/quant}"
mkdir -p "$out"
export KILN_CACHE_DIR="${KILN_CACHE_DIR:-/tmp/kiln-cache}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$out/gpu.txt"
status=0
timeout 200 python3 bench/peers.py --cases quant --impls "${PEER_IMPLS:-cublas,int4pack,compile}" \
  --json "$out/peers.json" > "$out/peers.log" 2>&1 || status=1
timeout 60 build/bin/kiln bench quant_w4g128 quant_w8 --no-tune --reps 30 --peers "$out/peers.json" \
  --json "$out/bench.json" > "$out/bench.log" 2>&1 || status=1
grep -E "^quant|kiln default |cublas |int4pack|torch.compile" "$out/bench.log" | cut -c1-110
# The group sizes and zero points at one token row (two for w4m2), 8192 x 8192.
for graph in bench/cases/quant/*.kiln; do
  name=$(basename "$graph" .kiln)
  timeout 30 build/bin/kiln run --bench "$graph" > "$out/run-$name.log" 2>&1 || status=1
  echo "$name: $(grep -E "rel_l2|CUDA graph" "$out/run-$name.log" | cut -c1-80 | tr '\n' ' ')"
done
if [[ -z "${FIGURES_ONLY:-}" ]]; then
  timeout 300 build/tests/kiln_gpu_tests --gtest_filter='QuantGpu.*' > "$out/tests.log" 2>&1 || status=1
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" "$out/tests.log"
fi
tar czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")"
exit $status
