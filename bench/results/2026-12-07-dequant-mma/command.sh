#!/bin/bash
# dequant_mma's first run: the check of every candidate with the weight in registers (odd
# shapes), the larger batches on their defaults, the i4 views written by pointwise kernels
# and the interleaved gemv; then bench/quant-run.sh's figures (peers, kiln bench quant with
# dequant_mma the default at 64 rows, the group sweep); then the tuner's sweep at 64 rows
# (w4 g128, 8192 x 8192), each schedule's best five; then the first build (build-a: the
# copies' addresses recomputed every step) under kiln bench beside this one; then the sweep
# at 16 rows. Run from the repository root on the GPU machine with OUT set.
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc KILN_TUNE_DB=/tmp/tune-db.json
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $R/smi.txt
timeout 190 build/tests/kiln_gpu_tests --gtest_filter='QuantGpu.EveryCandidateWithTheWeightInRegistersPassesItsCheck:QuantGpu.LargerBatchesOnTheirDefaults:QuantGpu.I4ViewsWrittenByAKernelMatchTheReference:QuantGpu.InterleavedWeightsOnTheGemv' > $R/tests.txt 2>&1
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|^\[       OK|Failure" $R/tests.txt | head -20
FIGURES_ONLY=1 timeout 170 bench/quant-run.sh $R/quant > $R/quant-run.txt 2>&1; echo "quant-run rc=$?"
cut -c1-120 $R/quant-run.txt
sweep() {  # rows seconds
  sed "s/bf16\[1,8192\]/bf16[$1,8192]/g" bench/cases/quant/w4g128.kiln > /tmp/w4m$1.kiln
  timeout $(($2 + 15)) build/bin/kiln tune --max-seconds $2 /tmp/w4m$1.kiln > $R/tune-m$1.txt 2>&1
  echo "== m $1"; head -2 $R/tune-m$1.txt | cut -c1-120
  for s in dequant_mma gemv mma_sync dequant_wgmma; do
    grep "schedule = $s," $R/tune-m$1.txt | awk -F'}' '{split($2,a," "); print a[2], $1 "}"}' | sort -n | head -5
  done
  grep -E "^\*|default|best" $R/tune-m$1.txt | cut -c1-160 | head -5
}
sweep 64 25
echo "== build-a, then this build: kiln bench quant_w4g128"
for b in build-a/kiln build/bin/kiln; do
  timeout 40 $b bench quant_w4g128 --no-tune --reps 20 > $R/ab-$(basename $(dirname $b)).txt 2>&1
  grep -E "^quant|kiln default" $R/ab-$(basename $(dirname $b)).txt | cut -c1-110
done
sweep 16 20
rm -rf $R/quant
cd $OUT && tar czf r.tgz r && rm -rf r
