#!/bin/bash
# Third call: 16 rows (w4 g128, 8192 x 8192) on the gemv's default beside dequant_wgmma and
# dequant_mma pinned (the tuner's sweep at 16 rows ran out of time compiling 414 candidates),
# `kiln run --bench` (CUDA graph, one input set: the 34 MB weight fits the H100's L2, so the
# figures are for comparing these four, not for the bars), each checked against the
# reference, two rounds in turn. Run from the repository root on the GPU machine with OUT set.
R=$OUT/r; mkdir -p $R
D=bench/results/2026-12-07-dequant-mma
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $R/smi.txt
for i in 1 2; do for f in gemv wgmma wgmma-wide mma; do
  echo "== $f $i" >> $R/m16.txt
  timeout 25 build/bin/kiln run --bench $D/m16-$f.kiln >> $R/m16.txt 2>&1
done; done
grep -E "^==|CUDA graph|rel_l2" $R/m16.txt | cut -c1-110
cd $OUT && tar czf r.tgz r && rm -rf r
