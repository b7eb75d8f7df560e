#!/usr/bin/env bash
# Attention on the GPU machine over a build made elsewhere (build/bin, build/tests): the
# attention GPU tests of both schedules, then the wgmma schedule's configs timed by `kiln
# run --bench` on the pinned graphs of bench/tune (each run checked against the reference;
# the D128 prompt at every legal config, by rewriting its tile line), then `kiln bench
# attention` (the default kernels beside the hand-written FlashAttention-2) and
# bench/peers.py's SDPA backends and Triton, in the same run. Logs go to the folder given
# (default out/attention), and all of them into one archive beside it, LOG_DIR.tgz.
#   usage: bench/attention-run.sh [LOG_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-out/attention}"
sizes="4x16x4096x128,4x16x4096x128c,4x16x2048x64c,4x32x4096x128g8c"
mkdir -p "$out"
export KILN_CACHE_DIR="${KILN_CACHE_DIR:-/tmp/kiln-cache}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$out/gpu.txt"
status=0
tests=build/tests/kiln_gpu_tests
# Correctness first, both schedules at once (their timings are not read).
timeout 200 "$tests" --gtest_filter='AttentionWgmmaGpu.*' > "$out/tests-wgmma.log" 2>&1 &
timeout 200 "$tests" --gtest_filter='AttentionGpu.*' > "$out/tests-mma-sync.log" 2>&1 &
wait
grep -hE "^\[  (PASSED|FAILED) " "$out"/tests-*.log
if grep -q "FAILED\|Failure" "$out/tests-wgmma.log" || ! grep -q "^\[  PASSED" "$out/tests-wgmma.log"; then
  echo "the wgmma schedule failed its tests: its timings are skipped"
  status=1
else
  # The pinned graphs: the D128 prompt at each (bc, stages), the others at their pinned config.
  run_pinned() {  # file label
    timeout 90 build/bin/kiln run --bench "$1" > "$out/run-$2.log" 2>&1 || status=1
    echo "$2: $(grep -E "rel_l2|^PASS|^FAIL|^bench: " "$out/run-$2.log" | cut -c1-90 | tr '\n' ' ')"
  }
  prompt=bench/tune/attention_wgmma_f16_4x16x4096x128.kiln
  for bc in 128 64; do
    for stages in 2 3; do
      sed "s/bc = 128, warps = 12, stages = 2/bc = $bc, warps = 12, stages = $stages/" "$prompt" > "$out/prompt-bc$bc-s$stages.kiln"
      run_pinned "$out/prompt-bc$bc-s$stages.kiln" "prompt-bc$bc-s$stages"
    done
  done
  run_pinned bench/tune/attention_wgmma_causal_f16_4x16x2048x64.kiln causal-d64
  run_pinned bench/tune/attention_wgmma_gqa_causal_f16_4x32x4096x128.kiln gqa-causal
  run_pinned examples/attention_hopper.kiln causal-d128
fi
# The default kernels and the hand-written FlashAttention-2, then the peers, in one run.
timeout 150 python3 bench/peers.py --cases attention --sizes "$sizes" --dtypes f16 --json "$out/peers.json" \
  > "$out/peers.log" 2>&1 || status=1
timeout 200 build/bin/kiln bench attention --sizes "$sizes" --no-tune --reps 20 --peers "$out/peers.json" \
  --json "$out/bench.json" > "$out/bench.log" 2>&1 || status=1
grep -vE "^\s*$" "$out/bench.log" | tail -n 40
tar czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")"
exit $status
