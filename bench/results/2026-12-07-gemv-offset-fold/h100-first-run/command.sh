#!/bin/bash
# gemv branch on this card: A/B against main, group sizes; attention figures; gemv checks; probe.
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $R/smi.txt; cat $R/smi.txt
for i in 1 2; do for b in kiln-new kiln-main; do
  timeout 30 .devscripts/$b bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_${b}_$i.txt 2>&1
done; done
for f in $R/bench_*; do echo "== $f"; grep -E "^quant|kiln default  |cublas  " $f | cut -c1-60; done
for f in w4 w4g32 w4g64 w4row w4z w4zi w4m2 w8; do
  echo "== $f" >> $R/groups.txt; timeout 15 .devscripts/kiln-new run --bench .devscripts/$f.kiln >> $R/groups.txt 2>&1
done
grep -E "^==|CUDA graph|rel_l2" $R/groups.txt | cut -c1-90
timeout 170 python3 bench/peers.py --cases attention --json $R/peers.json > $R/peers.log 2>&1; echo "peers rc=$?"
timeout 80 .devscripts/kiln-new bench attention attention_causal --no-tune --reps 20 --peers $R/peers.json > $R/attn.txt 2>&1; echo "attn rc=$?"
grep -E "^attention|kiln default  |hand-written  |cudnn  |flash  " $R/attn.txt | cut -c1-110
timeout 60 .devscripts/kiln-new bench attention attention_causal --arch sm_90 --sizes 4x16x4096x4096x128,4x16x4096x128c,4x16x2048x64c --no-tune --reps 20 --peers $R/peers.json > $R/attn_sm90.txt 2>&1; echo "sm90 rc=$?"
grep -E "^attention|kiln default  |hand-written  |flash  " $R/attn_sm90.txt | cut -c1-110
timeout 110 build/tests/kiln_gpu_tests --gtest_filter='QuantGpu.*:-QuantGpu.EveryDequantWgmmaCandidatePassesItsCheck' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
grep -E "^\[  (PASSED|FAILED|     OK) |^rc=|Failure" $R/tests.txt | head -20
if [ -x .devscripts/gh/harness ]; then (cd .devscripts/gh && timeout 40 ./harness > $R/harness.txt 2>&1); grep -E "read|base|loads|emitted" $R/harness.txt; fi
