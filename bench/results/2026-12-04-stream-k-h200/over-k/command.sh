#!/bin/bash
# The stream-K-over-K experiment (not kept): built with stream-k-over-k.patch applied to
# the tree of this directory's first commit. GPU tests of every split and stream-K
# candidate, sweeps of 1024 x 1024 x 65536, then kiln bench with the tuning record
# patched to stream-K (kiln tuned) beside the default split (kiln default) and cuBLAS.
set -u
cd "$(dirname "$0")/../../../.."
D=bench/results/2026-12-04-stream-k-h200/over-k
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
start=$(date +%s)
t() { echo "$1 after $(( $(date +%s) - start )) s" >> $R/gpu.txt; }
timeout 200 build/tests/kiln_gpu_tests --gtest_filter='GemmWgmmaGpu.EveryCandidateOfASplitKProduct:GemmWgmmaGpu.SplitK*:GemmWgmmaGpu.EveryCandidateOfAProductOfSeveralTilesABlock' > $R/gpu-tests.log 2>&1
t "tests"
export KILN_TUNE_DB=/tmp/tune-db.json
for d in f16 bf16; do timeout 100 build/bin/kiln tune $D/longk_$d.kiln > $R/tune-longk-$d.log 2>&1; t "tune $d"; done
cp /tmp/tune-db.json $R/tune-db-swept.json
python3 $D/patch_db.py /tmp/tune-db.json > $R/patch.log 2>&1
for i in 1 2; do
  timeout 100 build/bin/kiln bench gemm --sizes 1024x1024x65536 --no-tune --reps 30 > $R/bench-longk-$i.log 2>&1
  t "bench $i"
done
tar czf $OUT/run.tgz -C $OUT r
