#!/usr/bin/env bash
# Attention on the GPU machine over a build made elsewhere (build/bin, build/tests):
# bench/peers.py's SDPA backends and Triton, then `kiln bench attention attention_causal`
# (the default kernels, each checked against the reference, beside the hand-written
# FlashAttention-2) in the same run, and the prompts again as sm_90 code (the mma_sync
# schedule's figures); then the attention GPU tests of both schedules; then
# the wgmma schedule's configs timed by `kiln run --bench` on the pinned graphs of
# bench/tune (each run checked against the reference), by rewriting their tile lines.
# The figures come first so that a run cut short at the call's limit still has them.
# Logs go to the folder given (default out/attention), and all of them into one archive
# beside it, LOG_DIR.tgz.
#   usage: bench/attention-run.sh [LOG_DIR]
#   PROMPT_CONFIGS and D64_CONFIGS ("bc:stages" or "br:bc:stages", ...) choose the pinned
#   configs timed (br 192: three consumer warpgroups);
#   FIGURES_ONLY=1 stops after kiln bench.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-out/attention}"
# The same shapes in both tools' spelling: kiln bench reads four dims without a suffix as a
# batched GEMM, so its non-causal prompt names Sq and Skv.
peer_sizes="8x32x1x8192x128,4x16x4096x128,4x16x4097x128,4x16x4096x128c,4x16x2048x64c,4x32x4096x128cg8"
kiln_sizes="8x32x1x8192x128,4x16x4096x4096x128,4x16x4097x4097x128,4x16x4096x128c,4x16x2048x64c,4x32x4096x128cg8"
mkdir -p "$out"
export KILN_CACHE_DIR="${KILN_CACHE_DIR:-/tmp/kiln-cache}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$out/gpu.txt"
status=0
# The default kernels and the hand-written FlashAttention-2, then the peers, in one run.
timeout 150 python3 bench/peers.py --cases attention --sizes "$peer_sizes" --dtypes f16 --json "$out/peers.json" \
  > "$out/peers.log" 2>&1 || status=1
timeout 200 build/bin/kiln bench attention attention_causal --sizes "$kiln_sizes" --no-tune --reps 20 --peers "$out/peers.json" \
  --json "$out/bench.json" > "$out/bench.log" 2>&1 || status=1
grep -vE "^\s*$" "$out/bench.log" | tail -n 40
# The mma_sync schedule on the same card: sm_90 code has no wgmma, so Kiln's default there is
# the FlashAttention-2-style kernel, beside the same peers (the decode case is left out: it
# runs on mma_sync above already).
timeout 120 build/bin/kiln bench attention attention_causal --arch sm_90 --sizes "${kiln_sizes#*,}" --no-tune --reps 20 \
  --peers "$out/peers.json" --json "$out/bench-mma-sync.json" > "$out/bench-mma-sync.log" 2>&1 || status=1
grep -E "^attention|kiln default |torch sdpa flash" "$out/bench-mma-sync.log"
if [[ -n "${FIGURES_ONLY:-}" ]]; then
  tar czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")"
  exit $status
fi
tests=build/tests/kiln_gpu_tests
# Both schedules' tests at once (their timings are not read).
timeout 240 "$tests" --gtest_filter='AttentionWgmmaGpu.*' > "$out/tests-wgmma.log" 2>&1 &
timeout 240 "$tests" --gtest_filter='AttentionGpu.*' > "$out/tests-mma-sync.log" 2>&1 &
wait
grep -hE "^\[  (PASSED|FAILED) " "$out"/tests-*.log
if grep -q "FAILED\|Failure" "$out/tests-wgmma.log" || ! grep -q "^\[  PASSED" "$out/tests-wgmma.log"; then
  echo "the wgmma schedule failed its tests: its timings are skipped"
  status=1
else
  run_pinned() {  # file label
    timeout 90 build/bin/kiln run --bench "$1" > "$out/run-$2.log" 2>&1 || status=1
    echo "$2: $(grep -E "rel_l2|^PASS|^FAIL|^bench: " "$out/run-$2.log" | cut -c1-90 | tr '\n' ' ')"
  }
  # Each graph's tile line rewritten to every (bc, stages) named for it.
  sweep() {  # file label "[br:]bc:stages ..." (br 128, two consumers, unless named)
    local br bc stages config name
    for config in $3; do
      IFS=: read -r br bc stages <<< "$config"
      [[ -z "$stages" ]] && { stages="$bc" bc="$br" br=128; }
      name="$2-br$br-bc$bc-s$stages"
      sed "s/br = 128, bc = 128, warps = 12, stages = 2/br = $br, bc = $bc, warps = $(( 4 * (br / 64 + 1) )), stages = $stages/" \
        "$1" > "$out/$name.kiln"
      run_pinned "$out/$name.kiln" "$name"
    done
  }
  sweep bench/tune/attention_wgmma_f16_4x16x4096x128.kiln prompt "${PROMPT_CONFIGS:-128:2 128:3 64:2 64:3}"
  sweep bench/tune/attention_wgmma_causal_f16_4x16x2048x64.kiln causal-d64 "${D64_CONFIGS:-128:2 192:128:2 192:64:2}"
  # (The GQA prompt's pinned graph is left to kiln bench: kiln run's CPU check of its
  # 4 x 32 x 4096 x 4096 scores takes minutes.)
  run_pinned examples/attention_hopper.kiln causal-d128
fi
tar czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")"
exit $status
