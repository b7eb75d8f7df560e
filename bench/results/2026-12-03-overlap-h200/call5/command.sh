#!/bin/bash
# H200 run: the overlapped epilogue against the default, then the wgmma GPU tests.
set -u
cd "$(dirname "$0")/../../.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc KILN_AB_TIMEOUT=40
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
start=$(date +%s)
t() { echo "$1 after $(( $(date +%s) - start )) s" >> $R/gpu.txt; }
O='{"schedule": "wgmma", "bm": 128, "bn": 256, "bk": 64, "warps_m": 2, "warps_n": 1, "stages": 4, "group": 8, "split_k": 1, "overlap": 1}'
O5='{"schedule": "wgmma", "bm": 128, "bn": 256, "bk": 64, "warps_m": 2, "warps_n": 1, "stages": 5, "group": 8, "split_k": 1, "overlap": 1}'
OC='{"schedule": "wgmma", "bm": 128, "bn": 256, "bk": 64, "warps_m": 2, "warps_n": 1, "stages": 4, "group": 8, "split_k": 1, "cluster": 2, "overlap": 1}'
for f in bench/tune/gemm_bias_gelu_f16_4096x4096x4096 bench/tune/gemm_f16_4096x4096x4096 bench/results/2026-12-03-overlap-h200/gemm_bias_gelu_bf16_4096 bench/tune/gemm_bf16_4096x4096x4096 bench/results/2026-12-03-overlap-h200/gemm_bias_gelu_f16_8192 bench/tune/gemm_bias_gelu_f16_4096x4096x4096; do
  echo "== $f" >> $R/ab.log
  timeout 80 bench/config-ab.sh $f.kiln "$O" "$O5" "$OC" >> $R/ab.log 2>&1
  t "config-ab $f"
done
timeout 40 build/bin/kiln bench gemm_bias_gelu --no-tune --reps 20 > $R/bench-gelu.log 2>&1
t "bench"
timeout 200 build/tests/kiln_gpu_tests --gtest_filter='GemmWgmmaGpu.EveryCandidateOfAFusedEpilogueWithTails:GemmWgmmaGpu.EveryCandidateWithTailsInEveryTranspose' > $R/gpu-tests-wgmma-1.log 2>&1 &
timeout 200 build/tests/kiln_gpu_tests --gtest_filter='GemmWgmmaGpu.*:-GemmWgmmaGpu.EveryCandidateOfAFusedEpilogueWithTails:GemmWgmmaGpu.EveryCandidateWithTailsInEveryTranspose' > $R/gpu-tests-wgmma-2.log 2>&1 &
wait
t "wgmma tests"
tar czf $OUT/call5.tgz -C $OUT r
