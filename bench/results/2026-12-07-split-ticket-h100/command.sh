#!/bin/bash
# The split ticket as one acq_rel atomic (kiln-ticket) against two fence.sc (kiln-base): A/B in turn, then the GPU tests of splits.
R=$OUT/r; mkdir -p $R; export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name --format=csv,noheader | tee $R/smi.txt
for i in 1 2; do for b in kiln-ticket kiln-base; do
  timeout 40 .devscripts/$b bench col_mean middle_axis_sum --no-tune --reps 20 >> $R/ab-col.txt 2>&1
  timeout 40 .devscripts/$b bench gemm --sizes 1024x1024x65536 --no-tune --reps 20 >> $R/ab-splitk.txt 2>&1
  timeout 30 .devscripts/$b bench attention --sizes 8x32x1x8192x128 --no-tune --reps 20 >> $R/ab-decode.txt 2>&1
done; done
for f in $R/ab-*.txt; do echo "== $f"; grep -E "^(col|middle|gemm|attention)|kiln default  |cublas  " $f | cut -c1-75; done
timeout 200 build/tests/kiln_gpu_tests --gtest_filter='ColReduceGpu.*:IntegerReduceGpu.*:ReduceAxesGpu.*:AttentionGpu.Decoding*:*SplitK*:QuantGpu.DecodeRowsOnGemvEveryFormat:QuantGpu.GroupSizesFromThirtyTwoToARow:QuantGpu.OddShapesAndExpandedDequants' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
grep -E "^\[  (PASSED|FAILED|     OK) |^rc=|Failure" $R/tests.txt | head -40
