#!/bin/bash
# Second call: dequant_wgmma the default for 17-128 rows on sm_90a (the first call's sweep
# put it first), and the split's last slice reading its partials four columns and several
# items at a time (it waited an L2 round trip an element): the check of every candidate
# with the weight in registers again, the fixed tests (larger batches on their defaults, the
# i4 views through the device check), then bench/quant-run.sh's figures with that default,
# the tuner's sweep at 64 rows; then Nsight Compute on dequant_wgmma's default at 64 rows
# (stall reasons; mma-best.kiln, dequant_mma's best, waits for a call with more time). Run
# from the repository root on the GPU machine with OUT set.
R=$OUT/r; mkdir -p $R
D=bench/results/2026-12-07-dequant-mma
export KILN_CACHE_DIR=/tmp/kc KILN_TUNE_DB=/tmp/tune-db.json
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $R/smi.txt
timeout 160 build/tests/kiln_gpu_tests --gtest_filter='QuantGpu.EveryCandidateWithTheWeightInRegistersPassesItsCheck:QuantGpu.LargerBatchesOnTheirDefaults:QuantGpu.I4ViewsWrittenByAKernelMatchTheReference' > $R/tests.txt 2>&1
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|^\[       OK|Failure" $R/tests.txt | head -20
FIGURES_ONLY=1 timeout 170 bench/quant-run.sh $R/quant > $R/quant-run.txt 2>&1; echo "quant-run rc=$?"
grep -E "^quant_w4g128 bf16|^quant_w8 bf16 \[1,|kiln default  |cublas  |int4pack|^w4" $R/quant-run.txt | head -24 | cut -c1-120
sed "s/bf16\[1,8192\]/bf16[64,8192]/g" bench/cases/quant/w4g128.kiln > /tmp/w4m64.kiln
timeout 45 build/bin/kiln tune --max-seconds 30 /tmp/w4m64.kiln > $R/tune-m64.txt 2>&1
echo "== sweep m 64"; head -2 $R/tune-m64.txt | cut -c1-120
for s in dequant_mma mma_sync dequant_wgmma; do
  grep "schedule = $s," $R/tune-m64.txt | awk -F'}' '{split($2,a," "); print a[2], $1 "}"}' | sort -n | head -4
done
grep -E "^\*" $R/tune-m64.txt | cut -c1-160
for f in wgmma-default; do
  timeout 100 ncu --clock-control none -k regex:k0 -c 1 --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats --section ComputeWorkloadAnalysis build/bin/kiln run $D/$f.kiln > $R/ncu-$f.txt 2>&1
  echo "== ncu $f"; grep -E "Duration|Warp Cycles Per Issued|Stall|Achieved Occupancy|Eligible Warps|Issued Warp|No Eligible|Registers Per|Executed Ipc A|Tensor|Pipe" $R/ncu-$f.txt | head -40
done
rm -rf $R/quant
cd $OUT && tar czf r.tgz r && rm -rf r
