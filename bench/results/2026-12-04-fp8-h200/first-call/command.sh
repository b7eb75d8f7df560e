#!/bin/bash
# The first fp8 call (the tree of the fp8 commit, the e4m3 x e5m2 GPU test then at
# 1000 x 1504 x 1040, whose default is mma_sync: the test was wrong, not the kernel).
# GPU tests, peers (torch._scaled_mm), kiln bench gemm_fp8 with the peers merged, a sweep.
set -u
cd "$(dirname "$0")/../../../.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
start=$(date +%s)
t() { echo "$1 after $(( $(date +%s) - start )) s" >> $R/gpu.txt; }
timeout 240 build/tests/kiln_gpu_tests --gtest_filter='GemmFp8Gpu.*' > $R/gpu-tests-fp8.log 2>&1
t "fp8 gpu tests"
timeout 150 python3 bench/peers.py --cases gemm_fp8 --json $R/peers-fp8.json > $R/peers-fp8.log 2>&1
t "peers"
timeout 100 build/bin/kiln bench gemm_fp8 gemm --sizes 4096x4096x4096,8192x8192x8192 --no-tune --reps 30 \
  --peers $R/peers-fp8.json --json $R/kiln-bench-fp8.json > $R/bench-fp8.log 2>&1
t "bench"
KILN_TUNE_DB=/tmp/tune-db.json timeout 90 build/bin/kiln tune examples/fp8_scaled_matmul.kiln > $R/tune-fp8-4096.log 2>&1
t "tune"
tar czf $OUT/run.tgz -C $OUT r
