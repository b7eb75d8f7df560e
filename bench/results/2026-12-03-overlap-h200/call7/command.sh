#!/bin/bash
# H200 run: the overlapped epilogue on the batched product; the epilogue's cost by body; a sweep's time.
set -u
cd "$(dirname "$0")/../../.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc KILN_AB_TIMEOUT=40
start=$(date +%s)
t() { echo "$1 after $(( $(date +%s) - start )) s" >> $R/gpu.txt; }
cfg() { echo "{\"schedule\": \"wgmma\", \"bm\": 128, \"bn\": 256, \"bk\": 64, \"warps_m\": 2, \"warps_n\": 1, \"stages\": 4, \"group\": 8, \"split_k\": 1, \"overlap\": $1}"; }
for f in batched_f16 batched_gelu_f16; do
  echo "== $f" >> $R/ab.log
  timeout 80 bench/config-ab.sh bench/results/2026-12-03-overlap-h200/$f.kiln "$(cfg 1)" "$(cfg 2)" >> $R/ab.log 2>&1
  t "config-ab $f"
done
for f in bench/tune/gemm_f16_4096x4096x4096 bench/results/2026-12-03-overlap-h200/relu_f16_4096 bench/tune/gemm_bias_gelu_f16_4096x4096x4096 bench/results/2026-12-03-overlap-h200/relu_f16_4096 bench/tune/gemm_f16_4096x4096x4096; do
  echo "== $f" >> $R/bodies.log
  KILN_TUNE=off timeout 40 build/bin/kiln run $f.kiln --bench 2>&1 | grep -E "bench:|PASS|FAIL" >> $R/bodies.log
done
t "bodies"
rm -rf /tmp/kc-empty
( time KILN_CACHE_DIR=/tmp/kc-empty KILN_TUNE_DB=/tmp/tdb.json timeout 60 build/bin/kiln tune bench/tune/gemm_f16_4096x4096x4096.kiln ) > $R/tune.log 2>&1
t "tune"
timeout 150 build/tests/kiln_gpu_tests --gtest_filter='AutotunerGpu.*' > $R/gpu-tests-autotuner.log 2>&1
t "tests"
tar czf $OUT/call7.tgz -C $OUT r
