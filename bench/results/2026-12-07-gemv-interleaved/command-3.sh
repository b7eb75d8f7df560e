#!/bin/bash
# Third call: the GPU tests of the interleaved gemv and of i4 views written out by pointwise
# kernels (packed two a byte since the first call found them written a byte each), then the
# row-major and interleaved graphs timed the tuner's way (input sets rotated so that the
# weights come from DRAM, not L2: kiln run --bench keeps one set, which fits the H100's
# 50 MB L2), alternating, twice; the default config's row and the sweep's best.
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc KILN_TUNE_DB=/tmp/tune-db.json
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $R/smi.txt
timeout 120 build/tests/kiln_gpu_tests --gtest_filter='QuantGpu.I4ViewsWrittenByAKernelMatchTheReference:QuantGpu.InterleavedWeightsOnTheGemv' > $R/tests.txt 2>&1
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|^\[       OK|Failure" $R/tests.txt | head
for i in 1 2; do for f in w4g128 w4g128-interleaved w8 w8-interleaved; do
  timeout 25 build/bin/kiln tune --max-seconds 5 bench/cases/quant/$f.kiln > $R/tune-$f-$i.txt 2>&1
  echo "== $f $i"
  grep -E 'bn = 32, bk = (128|64), warps_n = 8, split_k = 1\}' $R/tune-$f-$i.txt | head -1 | cut -c1-120
  grep -E "^\*" $R/tune-$f-$i.txt | cut -c1-120
done; done
