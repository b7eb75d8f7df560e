#!/bin/bash
# The interleaved gemv's first run: its GPU test, then the row-major and interleaved graphs of
# bench/cases/quant in turn (kiln run --bench, CUDA graph, each checked against the
# reference), two rounds; the row-major gemv tests (the lowering of dequantised products
# changed); then bench/quant-run.sh's figures (peers and every graph of cases/quant in one
# run). Run from the repository root on the GPU machine with OUT set.
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $R/smi.txt
timeout 150 build/tests/kiln_gpu_tests --gtest_filter='QuantGpu.InterleavedWeightsOnTheGemv' > $R/test.txt 2>&1
echo "test rc=$?"; grep -E "^\[  (PASSED|FAILED)|Failure" $R/test.txt | head
for i in 1 2; do for f in w4g128 w4g128-interleaved w8 w8-interleaved; do
  echo "== $f $i" >> $R/ab.txt; timeout 20 build/bin/kiln run --bench bench/cases/quant/$f.kiln >> $R/ab.txt 2>&1
done; done
grep -E "^==|CUDA graph|rel_l2" $R/ab.txt | cut -c1-100
timeout 100 build/tests/kiln_gpu_tests --gtest_filter='QuantGpu.DecodeRowsOnGemvEveryFormat:QuantGpu.GroupSizesFromThirtyTwoToARow:QuantGpu.OddShapesAndExpandedDequants:QuantGpu.LargerBatchesOnMmaSync' > $R/tests.txt 2>&1
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|^\[       OK|Failure" $R/tests.txt | head
FIGURES_ONLY=1 timeout 280 bench/quant-run.sh $R/quant > $R/quant-run.txt 2>&1; echo "quant-run rc=$?"
cat $R/quant-run.txt | cut -c1-120
tar czf $OUT/quant.tgz -C $R quant
