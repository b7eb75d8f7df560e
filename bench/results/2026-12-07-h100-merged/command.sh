#!/bin/bash
# Whatever card comes: attention (Hopper and mma_sync beside SDPA), quant beside cuBLAS and torch int4,
# column reductions and the read floor, group sizes; then the spill twin's mma_sync sweep.
R=$OUT/r; mkdir -p $R; export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $R/smi.txt
timeout 130 python3 bench/peers.py --cases attention --sizes 4x16x4096x128,4x16x4096x128c,4x16x2048x64c,4x32x4096x128cg8,8x32x1x8192x128 --impls sdpa-flash,sdpa-cudnn --dtypes f16 --json $R/peers-attn.json > $R/peers-attn.log 2>&1; echo "peers attn rc=$?"
timeout 70 build/bin/kiln bench attention attention_causal --no-tune --reps 20 --peers $R/peers-attn.json > $R/attn-sm90a.txt 2>&1
grep -E "^attention|kiln default  |cudnn  " $R/attn-sm90a.txt | cut -c1-120
timeout 60 build/bin/kiln bench attention attention_causal --arch sm_90 --sizes 4x16x4096x4096x128,4x16x4096x128c,4x16x2048x64c --no-tune --reps 20 --peers $R/peers-attn.json > $R/attn-sm90.txt 2>&1
grep -E "^attention|kiln default  |hand-written  |flash  " $R/attn-sm90.txt | cut -c1-120
timeout 90 python3 bench/peers.py --cases quant --impls cublas,int4pack --json $R/peers-quant.json > $R/peers-quant.log 2>&1; echo "peers quant rc=$?"
timeout 40 build/bin/kiln bench quant_w4g128 quant_w8 --no-tune --reps 30 --peers $R/peers-quant.json > $R/bench-quant.txt 2>&1
grep -E "^quant|kiln default  |cublas  |int4" $R/bench-quant.txt | cut -c1-100
timeout 50 build/bin/kiln bench col_mean col_sum middle_axis_sum --no-tune --reps 20 > $R/bench-col.txt 2>&1
grep -E "^col|^middle|kiln default  |measured now" $R/bench-col.txt | cut -c1-120
(cd .devscripts/gh && timeout 40 ./harness > $R/harness.txt 2>&1); grep -E "^read" $R/harness.txt
for f in w4 w4g32 w4g64 w4row w4z w4zi w8; do
  echo "== $f" >> $R/groups.txt; timeout 15 build/bin/kiln run --bench .devscripts/$f.kiln >> $R/groups.txt 2>&1
done
grep -E "^==|CUDA graph" $R/groups.txt | cut -c1-80
for g in d128 d128c; do KILN_ARCH=sm_90 timeout 50 .devscripts/kiln-spill tune --max-seconds 40 --arch sm_90 --csv $R/tune-spill-$g.csv .devscripts/$g.kiln > $R/tune-spill-$g.log 2>&1; done
python3 .devscripts/tunetop.py $R/tune-spill-*.csv
