#!/bin/bash
# The first device call for the B-tile dequant_wgmma (not yet run): every candidate's check,
# then kiln bench with the schedule as the default for M <= 64 (a build with the heuristic
# line `if (gemm_dequant_wgmma_applies(k)) return gemm_dequant_wgmma_heuristic(k);` ahead of
# the gemv's, copied to .devscripts/kiln-dq) against the build without it (.devscripts/kiln-now).
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $R/smi.txt; cat $R/smi.txt
timeout 110 build/tests/kiln_gpu_tests --gtest_filter='QuantGpu.EveryDequantWgmmaCandidatePassesItsCheck' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
grep -E "^\[  (PASSED|FAILED|     OK) |^rc=|Failure|rel_l2|status" $R/tests.txt | head -20
timeout 40 .devscripts/kiln-dq bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_dq.txt 2>&1
timeout 40 .devscripts/kiln-now bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_now.txt 2>&1
for f in bench_dq bench_now; do echo "== $f"; grep -E "^quant|kiln default|cublas  |FAIL|rror" $R/$f.txt | grep -v "^  kiln default:" | cut -c1-100; done
cd $OUT && tar czf r.tgz r && rm -rf r
