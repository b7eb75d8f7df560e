#!/bin/bash
# The stream-K experiment (not kept): built with stream-k.patch applied to the tree of
# this directory's first commit. wgmma GPU tests (every candidate, the stream-K ones
# among them), then tuning sweeps that time every candidate, then kiln bench.
set -u
cd "$(dirname "$0")/../../.."
D=bench/results/2026-12-04-stream-k-h200
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
start=$(date +%s)
t() { echo "$1 after $(( $(date +%s) - start )) s" >> $R/gpu.txt; }
timeout 200 build/tests/kiln_gpu_tests --gtest_filter='GemmWgmmaGpu.EveryCandidateOfAProductOfSeveralTilesABlock:GemmWgmmaGpu.SplitK*' > $R/gpu-tests-sk.log 2>&1
t "sk tests"
export KILN_TUNE_DB=/tmp/tune-db.json
for f in gemm_f16_4096x4096x4096 gemm_bias_gelu_f16_4096x4096x4096 $D/gemm_bf16_8192; do
  g=$f.kiln; [ -f $g ] || g=bench/tune/$f.kiln
  timeout 100 build/bin/kiln tune $g > $R/tune-$(basename $f).log 2>&1
  t "tune $f"
done
timeout 150 build/bin/kiln bench gemm gemm_bias_gelu --sizes 4096x4096x4096,8192x8192x8192 --no-tune --reps 30 > $R/bench.log 2>&1
t "bench"
tar czf $OUT/run.tgz -C $OUT r
