#!/bin/bash
# H200 run at the tree of this directory's commit: the fp8 GPU tests, torch._scaled_mm
# (bench/peers.py), kiln bench gemm_fp8 with the peers merged, the f16 / bf16 gemm rows
# beside it (cuBLAS in the same process), the fp8 example, a tuning sweep of the 4096^3
# fp8 product, then every GPU test in four shards.
set -u
cd "$(dirname "$0")/../../.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
start=$(date +%s)
t() { echo "$1 after $(( $(date +%s) - start )) s" >> $R/gpu.txt; }
timeout 150 python3 bench/peers.py --cases gemm_fp8 --json $R/peers-fp8.json > $R/peers-fp8.log 2>&1
t "peers"
timeout 100 build/bin/kiln bench gemm_fp8 gemm --sizes 4096x4096x4096,8192x8192x8192 --no-tune --reps 30 \
  --peers $R/peers-fp8.json --json $R/kiln-bench-fp8.json > $R/bench-fp8.log 2>&1
t "bench"
timeout 60 build/bin/kiln run examples/fp8_scaled_matmul.kiln --bench > $R/example-fp8.log 2>&1
t "example"
rm -rf /tmp/kc-empty; mkdir -p /tmp/kc-empty
( time KILN_CACHE_DIR=/tmp/kc-empty KILN_TUNE_DB=/tmp/tune-db.json timeout 90 build/bin/kiln tune examples/fp8_scaled_matmul.kiln ) > $R/tune-fp8-4096.log 2>&1
t "tune"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 280 build/tests/kiln_gpu_tests --gtest_filter='*Gpu.*:-AutotunerGpu.*' > $R/gpu-tests-$i.log 2>&1 &
done
wait
t "gpu tests"
timeout 60 build/tests/kiln_gpu_tests --gtest_filter='AutotunerGpu.*' > $R/gpu-tests-autotuner.log 2>&1
t "autotuner tests"
for f in $R/gpu-tests-*.log; do echo "== $f"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|FAILED  \]" $f; done > $R/gpu-tests-summary.txt
tar czf $OUT/run.tgz -C $OUT r
