#!/bin/bash
# Packed dequant on mma_sync: tests, bench after/before, tuner sweeps at M = 16 and 64
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $R/smi.txt
timeout 200 build/tests/kiln_gpu_tests --gtest_filter='Quant*:-QuantGpu.EveryGemvCandidatePassesItsCheck' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
grep -E "^\[  (PASSED|FAILED|     OK) |^rc=|Failure" $R/tests.txt | head -30
B=.devscripts/kiln-before
timeout 45 build/bin/kiln bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_after1.txt 2>&1
timeout 45 $B bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_before1.txt 2>&1
timeout 45 build/bin/kiln bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_after2.txt 2>&1
for f in bench_after1 bench_before1; do echo "== $f"; grep -E "^quant|kiln default|cublas  " $R/$f.txt | grep -v "^  kiln default:"; done
KILN_TUNE_DB=/tmp/tdb.json timeout 90 build/bin/kiln tune --max-seconds 70 --csv $R/tune_w4m64.csv .devscripts/w4m64.kiln > $R/tune_w4m64.txt 2>&1
KILN_TUNE_DB=/tmp/tdb.json timeout 90 build/bin/kiln tune --max-seconds 70 --csv $R/tune_w4m16.csv .devscripts/w4m16.kiln > $R/tune_w4m16.txt 2>&1
for f in tune_w4m64 tune_w4m16; do python3 - $R/$f.csv <<'PY'
import csv,sys
rows=[r for r in csv.DictReader(open(sys.argv[1])) if r['status']=='ok']
rows.sort(key=lambda r: float(r['median_ms']))
print(sys.argv[1].split('/')[-1], len(rows))
for r in rows[:8]: print(f"{float(r['median_ms'])*1000:8.1f} us  {r['config']}")
PY
done
cd $OUT && tar czf r.tgz r && rm -rf r
