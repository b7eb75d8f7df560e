#!/bin/bash
# gemv at M > 8 back on per-row pointers; the tests callC's time limit cut; kiln bench after / before / after.
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $R/smi.txt
timeout 200 build/tests/kiln_gpu_tests --gtest_filter='QuantGpu.EveryGemvCandidatePassesItsCheck:QuantGpu.DecodeRowsOnGemvEveryFormat:QuantGpu.GroupSizesFromThirtyTwoToARow' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
grep -E "^\[  (PASSED|FAILED|     OK) |^rc=|Failure" $R/tests.txt | head -30
B=.devscripts/kiln-before
timeout 45 build/bin/kiln bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_after1.txt 2>&1
timeout 45 $B bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_before1.txt 2>&1
timeout 45 build/bin/kiln bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_after2.txt 2>&1
for f in bench_after1 bench_before1 bench_after2; do echo "== $f"; grep -E "^quant|kiln default|cublas  " $R/$f.txt | grep -v "^  kiln default:" | cut -c1-90; done
for f in w4 w4m16 w4m16g32; do
  echo "== $f" >> $R/groups.txt; timeout 20 build/bin/kiln run --bench .devscripts/$f.kiln >> $R/groups.txt 2>&1
done
grep -E "^==|CUDA graph" $R/groups.txt | cut -c1-80
cd $OUT && tar czf r.tgz r && rm -rf r
