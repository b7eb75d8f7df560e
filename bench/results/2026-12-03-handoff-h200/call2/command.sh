#!/bin/bash
# H200 run: the wgmma hand-off against the default (config-ab, kiln bench's cuBLAS rows in
# the same call), then the wgmma GPU tests beside the pipeline fuzzer on 12 processes.
set -u
cd "$(dirname "$0")/.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
start=$(date +%s)
t() { echo "$1 after $(( $(date +%s) - start )) s" >> $R/gpu.txt; }
H='{"schedule": "wgmma", "bm": 128, "bn": 256, "bk": 64, "warps_m": 2, "warps_n": 1, "stages": 3, "group": 8, "split_k": 1, "handoff": 1}'
for f in gemm_bias_gelu_f16_4096x4096x4096 gemm_f16_4096x4096x4096 gemm_bf16_4096x4096x4096; do
  timeout 90 bench/config-ab.sh bench/tune/$f.kiln "$H" > $R/ab-$f.log 2>&1
done
t "config-ab"
timeout 120 build/bin/kiln bench gemm gemm_bias_gelu --no-tune --reps 20 > $R/bench-gemm.log 2>&1
t "bench"
for f in gemm_bias_gelu_f16_4096x4096x4096; do
  timeout 90 bench/config-ab.sh bench/tune/$f.kiln "$H" > $R/ab2-$f.log 2>&1
done
t "config-ab again"
# FUZZER: build-fuzz/tests/fuzz/kiln_pipeline_fuzzer (scripts/run-fuzzer.sh builds it at 2ef1bab), debug info stripped
nv=$(dirname "$(find / -name 'libnvrtc.so.13*' 2>/dev/null | head -n 1)")
mkdir -p $R/fuzz/corpus $R/fuzz/artifacts; cp tests/fuzz/pipeline-corpus/* $R/fuzz/corpus/
LD_LIBRARY_PATH=$nv:${LD_LIBRARY_PATH:-} timeout 275 $FUZZER -fork=12 -max_total_time=250 -timeout=20 -rss_limit_mb=4096 \
  -print_final_stats=1 -artifact_prefix=$R/fuzz/artifacts/ $R/fuzz/corpus > $R/fuzz/fuzz.log 2>&1 &
timeout 275 build/tests/kiln_gpu_tests --gtest_filter='GemmWgmmaGpu.*' > $R/gpu-tests-wgmma.log 2>&1 &
wait
t "fuzzer and wgmma tests"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests? ran" $R/gpu-tests-wgmma.log > $R/gpu-tests-summary.txt
tail -n 30 $R/fuzz/fuzz.log > $R/fuzz-tail.txt
rm -rf $R/fuzz/corpus
tar czf $OUT/call2.tgz -C $OUT r
