#!/bin/bash
# H200 run at the tree of this directory's commit: the GEMM rows of kiln bench
# with the peers merged (bench/peers.py in the same call), the mma_sync schedule, the
# unaligned and M = 16 products, a tuning sweep with an empty compile cache, the erf GELU
# example, then every GPU test in four shards.
set -u
cd "$(dirname "$0")/../../.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
git log -1 --format='%H %s' >> $R/gpu.txt 2>/dev/null
start=$(date +%s)
t() { echo "$1 after $(( $(date +%s) - start )) s" >> $R/gpu.txt; }
timeout 200 python3 bench/peers.py --cases gemm,gemm_bias_gelu --sizes 4096x4096x4096 --dtypes f16 \
  --impls eager,compile,autotune,triton --json $R/peers-gemm.json > $R/peers.log 2>&1
t "peers"
timeout 120 build/bin/kiln bench gemm gemm_bias_gelu --sizes 4096x4096x4096,8192x8192x8192 --no-tune --reps 30 \
  --peers $R/peers-gemm.json --json $R/kiln-bench-gemm.json > $R/bench-wgmma.log 2>&1
t "bench wgmma"
timeout 80 build/bin/kiln bench gemm --arch sm_90 --sizes 4096x4096x4096,8192x8192x8192 --no-tune --reps 30 > $R/bench-mma-sync.log 2>&1
t "bench mma_sync"
timeout 60 build/bin/kiln bench gemm gemm_bias_gelu --sizes 4093x4099x4097,16x8192x8192 --no-tune --reps 30 > $R/bench-odd-and-m16.log 2>&1
t "bench odd"
rm -rf /tmp/kc-empty; mkdir -p /tmp/kc-empty
( time KILN_CACHE_DIR=/tmp/kc-empty KILN_TUNE_DB=/tmp/tune-db.json timeout 60 build/bin/kiln tune bench/tune/gemm_f16_4096x4096x4096.kiln ) > $R/tune-gemm-f16-4096.log 2>&1
t "tune"
timeout 60 build/bin/kiln run examples/matmul_bias_gelu.kiln --bench > $R/example-matmul-bias-gelu.log 2>&1
t "example"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 250 build/tests/kiln_gpu_tests --gtest_filter='*Gpu.*:-AutotunerGpu.*' > $R/gpu-tests-$i.log 2>&1 &
done
wait
t "gpu tests"
timeout 60 build/tests/kiln_gpu_tests --gtest_filter='AutotunerGpu.*' > $R/gpu-tests-autotuner.log 2>&1
t "autotuner tests"
for f in $R/gpu-tests-*.log; do echo "== $f"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|FAILED  \]" $f; done > $R/gpu-tests-summary.txt
tar czf $OUT/run.tgz -C $OUT r
