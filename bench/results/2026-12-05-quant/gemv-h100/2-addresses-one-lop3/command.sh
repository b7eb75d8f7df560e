#!/bin/bash
# gemv: the scale on the products' sums (and the i8 fp32 path by the 2^23 trick): GPU tests,
# kiln bench quant after / before / after, group sizes, tuner sweeps at M = 1 and 16.
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $R/smi.txt
timeout 200 build/tests/kiln_gpu_tests --gtest_filter='Quant*' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
grep -E "^\[  (PASSED|FAILED|     OK) |^rc=|Failure" $R/tests.txt | head -30
B=.devscripts/kiln-before
timeout 45 build/bin/kiln bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_after1.txt 2>&1
timeout 45 $B bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_before1.txt 2>&1
timeout 45 build/bin/kiln bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_after2.txt 2>&1
for f in bench_after1 bench_before1 bench_after2; do echo "== $f"; grep -E "^quant|kiln default|cublas  " $R/$f.txt | grep -v "^  kiln default:" | cut -c1-120; done
for f in w4 w4g32 w4g64 w4row w4z w4zi w4m2 w4m16 w4m16g32 w8; do
  echo "== $f" >> $R/groups.txt; timeout 20 build/bin/kiln run --bench .devscripts/$f.kiln >> $R/groups.txt 2>&1
done
grep -E "^==|rel_l2|CUDA graph" $R/groups.txt | cut -c1-110
for f in w4 w4z w4zi w4m16 w8; do echo "== before $f" >> $R/groups_before.txt; timeout 20 $B run --bench .devscripts/$f.kiln >> $R/groups_before.txt 2>&1; done
grep -E "^==|CUDA graph" $R/groups_before.txt | cut -c1-80
for f in w4 w4m16 w8; do
KILN_TUNE_DB=/tmp/tdb.json timeout 55 build/bin/kiln tune --max-seconds 40 --csv $R/tune_$f.csv .devscripts/$f.kiln > $R/tune_$f.txt 2>&1
python3 - $R/tune_$f.csv <<'PY'
import csv,sys
rows=[r for r in csv.DictReader(open(sys.argv[1])) if r['status']=='ok']
rows.sort(key=lambda r: float(r['median_ms']))
print(sys.argv[1].split('/')[-1], len(rows))
for r in rows[:6]: print(f"{float(r['median_ms'])*1000:8.1f} us  {r['config']}")
PY
done
# SASS of the kernels before / after (cubins made on the build machine from kiln opt --emit=cuda)
mkdir -p $OUT/sass; for c in .devscripts/sass-*.cubin; do n=$(basename $c .cubin); cuobjdump -sass $c > $OUT/sass/$n.sass 2>&1; echo "$n $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $OUT/sass/$n.sass)"; done
cd $OUT && tar czf r.tgz r && rm -rf r
