#!/bin/bash
# Final: every quant GPU test at the final code, and the M = 64 sweep after the split fold change.
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $R/smi.txt; cat $R/smi.txt
timeout 400 build/tests/kiln_gpu_tests --gtest_filter='QuantGpu.*' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
grep -E "^\[  (PASSED|FAILED|     OK) |^rc=|Failure" -A2 $R/tests.txt | head -40
timeout 70 build/bin/kiln tune .devscripts/w4m64.kiln --max-seconds 50 --csv $R/tune64.csv > $R/tune64.txt 2>&1
python3 .devscripts/tunetop.py $R/tune64.csv
cd $OUT && tar czf r.tgz r && rm -rf r
