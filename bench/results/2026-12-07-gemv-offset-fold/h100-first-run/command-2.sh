#!/bin/bash
R=$OUT/r; mkdir -p $R; export KILN_CACHE_DIR=/tmp/kc
timeout 200 build/tests/kiln_gpu_tests --gtest_filter='QuantGpu.EveryGemv*:QuantGpu.*Gemv*' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
grep -E "^\[  (PASSED|FAILED|     OK) |^rc=|Failure" $R/tests.txt | head -20
timeout 60 .devscripts/kiln-new tune --max-seconds 40 --csv $R/tune-cm256.csv .devscripts/cm256.kiln > $R/tune-cm256.log 2>&1
timeout 60 .devscripts/kiln-new tune --max-seconds 40 --csv $R/tune-cm1024.csv .devscripts/cm1024.kiln > $R/tune-cm1024.log 2>&1
KILN_ARCH=sm_90 timeout 100 .devscripts/kiln-new tune --max-seconds 80 --arch sm_90 --csv $R/tune-d128c.csv .devscripts/d128c.kiln > $R/tune-d128c.log 2>&1
python3 .devscripts/tunetop.py $R/*.csv
