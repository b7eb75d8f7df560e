#!/bin/bash
# Second call: every quantised GPU test but the dequant_wgmma candidates' (the lowering of
# dequantised products changed), and a sweep of the interleaved M = 1 product's gemv configs.
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $R/smi.txt
timeout 60 build/bin/kiln tune --max-seconds 45 --csv $R/tune-w4i.csv bench/cases/quant/w4g128-interleaved.kiln > $R/tune-w4i.txt 2>&1
echo "tune rc=$?"; tail -5 $R/tune-w4i.txt | cut -c1-160
sort -t, -k1,1 $R/tune-w4i.csv 2>/dev/null | head -3
timeout 400 build/tests/kiln_gpu_tests --gtest_filter='QuantGpu.*:-QuantGpu.EveryDequantWgmmaCandidatePassesItsCheck' > $R/tests.txt 2>&1
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|^\[       OK|Failure" $R/tests.txt | head -20
