#!/bin/bash
# dequant_wgmma: correctness on every candidate, then kiln bench against the build before it, then tune sweeps.
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $R/smi.txt; cat $R/smi.txt
timeout 240 build/tests/kiln_gpu_tests --gtest_filter='QuantGpu.EveryDequantWgmmaCandidatePassesItsCheck:QuantGpu.LargerBatchesOnTensorCores' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
grep -E "^\[  (PASSED|FAILED|     OK) |^rc=|Failure|rel|status" $R/tests.txt | head -40
B=.devscripts/kiln-base
timeout 60 build/bin/kiln bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_after1.txt 2>&1
timeout 60 $B bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_before1.txt 2>&1
for f in bench_after1 bench_before1; do echo "== $f"; grep -E "^quant|kiln default|cublas  |FAIL|rror" $R/$f.txt | grep -v "^  kiln default:" | cut -c1-110; done
timeout 70 build/bin/kiln tune .devscripts/w4m64.kiln --max-seconds 50 --csv $R/tune64.csv > $R/tune64.txt 2>&1
timeout 50 build/bin/kiln tune .devscripts/w4m16.kiln --max-seconds 35 --csv $R/tune16.csv > $R/tune16.txt 2>&1
timeout 50 build/bin/kiln tune .devscripts/w4.kiln --max-seconds 35 --csv $R/tune1.csv > $R/tune1.txt 2>&1
python3 .devscripts/tunetop.py $R/tune64.csv $R/tune16.csv $R/tune1.csv
cd $OUT && tar czf r.tgz r && rm -rf r
