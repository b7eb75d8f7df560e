#!/bin/bash
# Packed dequant: the fixed test, plain GEMM at 64x8192x8192, ncu of the w4 M=64 kernel, a deeper sweep
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
timeout 120 build/tests/kiln_gpu_tests --gtest_filter='QuantGpu.EveryPacked*:QuantGpu.LargerBatches*' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
grep -E "^\[  (PASSED|FAILED|     OK) |^rc=|Failure" $R/tests.txt | head -30
timeout 60 build/bin/kiln bench gemm --sizes 64x8192x8192 --no-tune --reps 30 > $R/gemm64.txt 2>&1
grep -E "^gemm|kiln default|cublas  " $R/gemm64.txt | grep -v "^  kiln default:" | cut -c1-200
KILN_TUNE_DB=/tmp/tdb.json timeout 100 build/bin/kiln tune --max-seconds 80 --csv $R/tune_w4m64.csv .devscripts/w4m64.kiln > $R/tune_w4m64.txt 2>&1
python3 - $R/tune_w4m64.csv <<'PY'
import csv,sys
rows=[r for r in csv.DictReader(open(sys.argv[1])) if r['status']=='ok']
rows.sort(key=lambda r: float(r['median_ms']))
print(len(rows))
for r in rows[:10]: print(f"{float(r['median_ms'])*1000:8.1f} us  {r['config']}")
PY
timeout 120 ncu --clock-control none -k regex:k0 -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats build/bin/kiln run --bench .devscripts/w4m64.kiln > $R/ncu.txt 2>&1
grep -E "Throughput|Duration|Warp Cycles|Stall|Occupancy|Eligible|Issued|Registers|Shared Memory|L2 Hit|Mem Busy|Max Bandwidth|Block Limit" $R/ncu.txt | head -60
cd $OUT && tar czf r.tgz r && rm -rf r
