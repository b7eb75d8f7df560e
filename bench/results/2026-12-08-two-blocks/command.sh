#!/bin/bash
# First call: dequant_wgmma's launch bounds now ask for as many blocks an SM as their
# shared memory allows (two at a ring of 3: 128 registers a thread). The check of every
# candidate with the weight in registers (the sweep now holds rings of 3), the larger
# batches on their defaults; 16 rows on the gemv's default beside dequant_wgmma and
# dequant_mma pinned (kiln run --bench, CUDA graph, two rounds); the tuner's sweep at 64
# rows and at 16; Nsight Compute (stall reasons, the tensor pipe) on the one-block default and the two-block config. First
# wgmma_rate.cu: an SM's cycles per m64nNk16 by N, A's place and warpgroups (built on the
# build machine first, with the line in its header, and carried with the tree).
# Run from the repository root on the GPU machine with OUT set.
R=$OUT/r; mkdir -p $R
D=bench/results/2026-12-07-dequant-mma
H=bench/results/2026-12-08-two-blocks
export KILN_CACHE_DIR=/tmp/kc KILN_TUNE_DB=/tmp/tune-db.json
snap() { (cd $OUT && tar czf r.tgz r); }  # what a call cut short still brings back
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $R/smi.txt
$H/wgmma_rate | tee $R/wgmma-rate.txt
for i in 1 2; do for f in $D/m16-gemv $D/m16-wgmma $D/m16-wgmma-wide $D/m16-mma $D/wgmma-default $H/wgmma-two-blocks; do
  echo "== $f $i" >> $R/run.txt
  timeout 25 build/bin/kiln run --bench $f.kiln >> $R/run.txt 2>&1
done; done
grep -E "^==|CUDA graph|rel_l2" $R/run.txt | cut -c1-110
snap
sed "s/bf16\[1,8192\]/bf16[64,8192]/g" bench/cases/quant/w4g128.kiln > /tmp/w4m64.kiln
timeout 60 build/bin/kiln tune --max-seconds 45 /tmp/w4m64.kiln > $R/tune-m64.txt 2>&1
echo "== sweep m 64"; head -2 $R/tune-m64.txt | cut -c1-120
for s in dequant_mma mma_sync dequant_wgmma; do
  grep "schedule = $s," $R/tune-m64.txt | awk -F'}' '{split($2,a," "); print a[2], $1 "}"}' | sort -n | head -6
done
grep -E "^\*" $R/tune-m64.txt | cut -c1-160
snap
timeout 150 build/tests/kiln_gpu_tests --gtest_filter='QuantGpu.EveryCandidateWithTheWeightInRegistersPassesItsCheck:QuantGpu.LargerBatchesOnTheirDefaults' > $R/tests.txt 2>&1
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|^\[       OK|Failure" $R/tests.txt | head -20
snap
sed "s/bf16\[1,8192\]/bf16[16,8192]/g" bench/cases/quant/w4g128.kiln > /tmp/w4m16.kiln
timeout 60 build/bin/kiln tune --max-seconds 45 /tmp/w4m16.kiln > $R/tune-m16.txt 2>&1
echo "== sweep m 16"; head -2 $R/tune-m16.txt | cut -c1-120
for s in gemv dequant_mma mma_sync dequant_wgmma; do
  grep "schedule = $s," $R/tune-m16.txt | awk -F'}' '{split($2,a," "); print a[2], $1 "}"}' | sort -n | head -4
done
grep -E "^\*" $R/tune-m16.txt | cut -c1-160
snap
for f in $D/wgmma-default $H/wgmma-two-blocks; do
  b=$(basename $f)
  timeout 100 ncu --clock-control none -k regex:k0 -c 1 --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy --print-details all build/bin/kiln run $f.kiln > $R/ncu-$b.txt 2>&1
  timeout 60 ncu --clock-control none -k regex:k0 -c 1 --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.sum,smsp__inst_executed.sum build/bin/kiln run $f.kiln >> $R/ncu-$b.txt 2>&1
  echo "== ncu $b"; grep -E "Duration|Warp Cycles Per Issued|Achieved Occupancy|Eligible Warps|Registers Per|Stall|Tensor|stall|Pipe|gmma|inst_executed" $R/ncu-$b.txt | head -50 | cut -c1-130
done
cd $OUT && tar czf r.tgz r && rm -rf r
