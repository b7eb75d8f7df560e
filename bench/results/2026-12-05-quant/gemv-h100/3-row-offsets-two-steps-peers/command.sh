#!/bin/bash
# gemv: constant row offsets, two steps a trip, literal offsets; GPU tests, peers (torch int4,
# torch.compile, cuBLAS) then kiln bench after / before / after in one call, group sizes, SASS.
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $R/smi.txt
timeout 230 build/tests/kiln_gpu_tests --gtest_filter='Quant*' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
grep -E "^\[  (PASSED|FAILED|     OK) |^rc=|Failure" $R/tests.txt | head -30
timeout 150 python3 bench/peers.py --cases quant --dtypes bf16 --json $R/peers-quant.json > $R/peers-quant.log 2>&1; echo "peers rc=$?"
grep -E "quant_" $R/peers-quant.log | cut -c1-100 | head -12
B=.devscripts/kiln-before
timeout 45 build/bin/kiln bench quant_w4g128 quant_w8 --no-tune --reps 30 --peers $R/peers-quant.json --json $R/kiln-bench-quant.json > $R/bench_after1.txt 2>&1
timeout 45 $B bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_before1.txt 2>&1
timeout 45 build/bin/kiln bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_after2.txt 2>&1
for f in bench_after1 bench_before1 bench_after2; do echo "== $f"; grep -E "^quant|kiln default|cublas  " $R/$f.txt | grep -v "^  kiln default:" | cut -c1-100; done
for f in w4 w4g32 w4g64 w4row w4z w4zi w4m2 w4m16 w4m16g32 w8; do
  echo "== $f" >> $R/groups.txt; timeout 20 build/bin/kiln run --bench .devscripts/$f.kiln >> $R/groups.txt 2>&1
done
grep -E "^==|CUDA graph" $R/groups.txt | cut -c1-80
mkdir -p $R/sass; for c in .devscripts/sass-*.cubin; do n=$(basename $c .cubin); cuobjdump -sass $c > $R/sass/$n.sass 2>&1; echo "$n $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $R/sass/$n.sass)"; done
cd $OUT && tar czf r.tgz r && rm -rf r
