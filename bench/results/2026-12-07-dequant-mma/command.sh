#!/bin/bash
# dequant_mma's first run: the check of every candidate with the weight in registers (odd
# shapes), the larger batches on their defaults, the i4 views written by pointwise kernels
# and the interleaved gemv; then bench/quant-run.sh's figures (peers, kiln bench quant with
# dequant_mma the default at 64 rows, the group sweep); then the tuner's sweeps at 16 and 64
# rows (w4 g128, 8192 x 8192), each schedule's best five. Run from the repository root on
# the GPU machine with OUT set.
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc KILN_TUNE_DB=/tmp/tune-db.json
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $R/smi.txt
timeout 200 build/tests/kiln_gpu_tests --gtest_filter='QuantGpu.EveryCandidateWithTheWeightInRegistersPassesItsCheck:QuantGpu.LargerBatchesOnTheirDefaults:QuantGpu.I4ViewsWrittenByAKernelMatchTheReference:QuantGpu.InterleavedWeightsOnTheGemv' > $R/tests.txt 2>&1
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|^\[       OK|Failure" $R/tests.txt | head -20
FIGURES_ONLY=1 timeout 230 bench/quant-run.sh $R/quant > $R/quant-run.txt 2>&1; echo "quant-run rc=$?"
cut -c1-120 $R/quant-run.txt
for m in 64 16; do
  sed "s/bf16\[1,8192\]/bf16[$m,8192]/g" bench/cases/quant/w4g128.kiln > /tmp/w4m$m.kiln
  timeout 45 build/bin/kiln tune --max-seconds 30 /tmp/w4m$m.kiln > $R/tune-m$m.txt 2>&1
  echo "== m $m"; head -2 $R/tune-m$m.txt | cut -c1-120
  for s in dequant_mma gemv mma_sync dequant_wgmma; do
    grep "schedule = $s," $R/tune-m$m.txt | awk -F'}' '{split($2,a," "); print a[2], $1 "}"}' | sort -n | head -5
  done
  grep -E "^\*|default|best" $R/tune-m$m.txt | cut -c1-160 | head -5
done
rm -rf $R/quant
