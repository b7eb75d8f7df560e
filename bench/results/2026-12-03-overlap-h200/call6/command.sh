#!/bin/bash
# H200 run: the overlapped epilogue, strips spread over the K steps, against the default.
set -u
cd "$(dirname "$0")/../../.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc KILN_AB_TIMEOUT=40
start=$(date +%s)
t() { echo "$1 after $(( $(date +%s) - start )) s" >> $R/gpu.txt; }
cfg() { echo "{\"schedule\": \"wgmma\", \"bm\": 128, \"bn\": 256, \"bk\": 64, \"warps_m\": 2, \"warps_n\": 1, \"stages\": 4, \"group\": 8, \"split_k\": 1, \"overlap\": $1}"; }
for f in bench/tune/gemm_bias_gelu_f16_4096x4096x4096 bench/tune/gemm_f16_4096x4096x4096 bench/results/2026-12-03-overlap-h200/gemm_bias_gelu_bf16_4096; do
  echo "== $f" >> $R/ab.log
  timeout 80 bench/config-ab.sh $f.kiln "$(cfg 8)" "$(cfg 4)" "$(cfg 2)" >> $R/ab.log 2>&1
  t "config-ab $f"
done
echo "== 8192" >> $R/ab.log
timeout 80 bench/config-ab.sh bench/results/2026-12-03-overlap-h200/gemm_bias_gelu_f16_8192.kiln "$(cfg 16)" "$(cfg 8)" >> $R/ab.log 2>&1
t "config-ab 8192"
timeout 200 build/tests/kiln_gpu_tests --gtest_filter='GemmWgmmaGpu.EveryCandidateOfAFusedEpilogueOfSeveralTilesABlock:GemmWgmmaGpu.EveryCandidateOfAProductOfSeveralTilesABlock' > $R/gpu-tests-wgmma.log 2>&1
t "tests"
tar czf $OUT/call6.tgz -C $OUT r
