#!/bin/bash
# GPU tests of the gemv paths, kiln bench quant after/before, group sizes, probe
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $R/smi.txt
git log --oneline -1 > $R/commit.txt
timeout 90 build/tests/kiln_gpu_tests --gtest_filter='Quant*:-QuantGpu.EveryGemvCandidatePassesItsCheck' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
grep -E "^\[  (PASSED|FAILED|     OK) |^rc=|Failure" $R/tests.txt | head -20
B=.devscripts/kiln-before
timeout 45 build/bin/kiln bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_after1.txt 2>&1
timeout 45 $B bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_before1.txt 2>&1
timeout 45 build/bin/kiln bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_after2.txt 2>&1
tail -25 $R/bench_after1.txt
.devscripts/gemv_probe3 > $R/probe3.txt 2>&1; tail -14 $R/probe3.txt
for f in w4 w4g32 w4g64 w4row w4z w4zi w4m16 w8; do
  echo "== $f" >> $R/groups.txt; timeout 20 build/bin/kiln run --bench .devscripts/$f.kiln >> $R/groups.txt 2>&1
done
grep -E "==|graph|us" $R/groups.txt | head -40
KILN_TUNE_DB=/tmp/tdb.json timeout 100 build/bin/kiln tune --max-seconds 80 --csv $R/tune_w4.csv .devscripts/w4.kiln > $R/tune_w4.txt 2>&1; sort -t, -k3 -g $R/tune_w4.csv 2>/dev/null | head -3
KILN_TUNE_DB=/tmp/tdb.json timeout 100 build/bin/kiln tune --max-seconds 80 --csv $R/tune_w4m16.csv .devscripts/w4m16.kiln > $R/tune_w4m16.txt 2>&1
cuobjdump -sass .devscripts/gemv_probe3 > $R/probe3.sass 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
