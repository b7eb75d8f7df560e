#!/bin/bash
# H200 run: Nsight Compute on the 4096^3 product, plain and with bias + GELU, to see what
# the epilogue waits on (stall reasons per SASS instruction).
set -u
cd "$(dirname "$0")/../../.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc KILN_TUNE=off
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -n 1)
echo "ncu: $NCU" > $R/ncu.txt
for f in gemm_bias_gelu_f16 gemm_f16; do
  timeout 80 $NCU --clock-control none --section SpeedOfLight --section WarpStateStats --section SourceCounters \
    -k regex:^k0$ -c 1 -o /tmp/$f build/bin/kiln run bench/tune/${f}_4096x4096x4096.kiln > $R/$f-run.log 2>&1
  $NCU -i /tmp/$f.ncu-rep --page details > $R/$f-details.txt 2>&1
  $NCU -i /tmp/$f.ncu-rep --page source --csv --print-source sass > $R/$f-sass.csv 2>&1
  gzip $R/$f-sass.csv
done
