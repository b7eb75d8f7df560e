#!/bin/bash
# gemv variants (harness); the offset fold's checks and A/B; the H200's quant and attention figures with peers.
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $R/smi.txt; cat $R/smi.txt
(cd .devscripts/gh && timeout 90 ./harness > $R/harness.txt 2>&1); cat $R/harness.txt
timeout 120 build/tests/kiln_gpu_tests --gtest_filter='QuantGpu.*:-QuantGpu.EveryDequantWgmmaCandidatePassesItsCheck' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
grep -E "^\[  (PASSED|FAILED|     OK) |^rc=|Failure|rel_l2|error" $R/tests.txt | head -20
for i in 1; do
timeout 40 .devscripts/kiln-fold bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_fold$i.txt 2>&1
timeout 40 .devscripts/kiln-main bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_main$i.txt 2>&1
done
for f in bench_fold1 bench_main1; do echo "== $f"; grep -E "^quant|kiln default  |cublas  " $R/$f.txt | cut -c1-60; done
for b in kiln-fold; do for f in w4 w4g32 w4g64 w4row w4z w4zi w4m2; do
  echo "== $b $f" >> $R/groups.txt; timeout 20 .devscripts/$b run --bench .devscripts/$f.kiln >> $R/groups.txt 2>&1
done; done
grep -E "^==|CUDA graph|rel_l2" $R/groups.txt | cut -c1-90
