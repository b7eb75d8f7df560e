#!/bin/bash
# The first of the four GPU test shards of ../command.sh, which ran past its time limit
# there, again (as shards 0 and 4 of 8, side by side), at the same code.
set -u
cd "$(dirname "$0")/../../../.."
R=$OUT/r; mkdir -p $R; export KILN_CACHE_DIR=/tmp/kc
for i in 0 4; do GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 400 build/tests/kiln_gpu_tests --gtest_filter='*Gpu.*:-AutotunerGpu.*' > $R/gpu-tests-8-$i.log 2>&1 & done; wait
for f in $R/gpu-tests-8-*.log; do echo "== $f"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|FAILED  \]" $f; done | tee $R/summary.txt
