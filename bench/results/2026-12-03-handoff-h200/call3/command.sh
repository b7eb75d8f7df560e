#!/bin/bash
# H200 run: the wgmma hand-off (setmaxnreg within the block's pool) against the default,
# kiln bench's bias + GELU rows, then the wgmma GPU tests beside the pipeline fuzzer.
set -u
cd "$(dirname "$0")/.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
start=$(date +%s)
t() { echo "$1 after $(( $(date +%s) - start )) s" >> $R/gpu.txt; }
H='{"schedule": "wgmma", "bm": 128, "bn": 256, "bk": 64, "warps_m": 2, "warps_n": 1, "stages": 3, "group": 8, "split_k": 1, "handoff": 1}'
for f in gemm_bias_gelu_f16_4096x4096x4096 gemm_f16_4096x4096x4096; do
  timeout 60 bench/config-ab.sh bench/tune/$f.kiln "$H" > $R/ab-$f.log 2>&1
  t "config-ab $f"
done
timeout 60 build/bin/kiln bench gemm_bias_gelu --no-tune --reps 20 > $R/bench-gelu.log 2>&1
t "bench"
timeout 40 bench/config-ab.sh bench/tune/gemm_bias_gelu_f16_4096x4096x4096.kiln "$H" > $R/ab2-gelu.log 2>&1
t "config-ab again"
# FUZZER: build-fuzz/tests/fuzz/kiln_pipeline_fuzzer (scripts/run-fuzzer.sh builds it at 2ef1bab), debug info stripped
nv=$(dirname "$(find / -name 'libnvrtc.so.13*' 2>/dev/null | head -n 1)")
mkdir -p $R/fuzz/corpus $R/fuzz/artifacts; cp tests/fuzz/pipeline-corpus/* $R/fuzz/corpus/
LD_LIBRARY_PATH=$nv:${LD_LIBRARY_PATH:-} timeout 150 $FUZZER -fork=12 -max_total_time=130 -timeout=20 -rss_limit_mb=4096 \
  -print_final_stats=1 -artifact_prefix=$R/fuzz/artifacts/ $R/fuzz/corpus > $R/fuzz/fuzz.log 2>&1 &
timeout 230 build/tests/kiln_gpu_tests --gtest_filter='GemmWgmmaGpu.EveryCandidateOfAFusedEpilogueWithTails:GemmWgmmaGpu.EveryCandidateWithTailsInEveryTranspose' > $R/gpu-tests-wgmma-1.log 2>&1 &
timeout 230 build/tests/kiln_gpu_tests --gtest_filter='GemmWgmmaGpu.*:-GemmWgmmaGpu.EveryCandidateOfAFusedEpilogueWithTails:GemmWgmmaGpu.EveryCandidateWithTailsInEveryTranspose' > $R/gpu-tests-wgmma-2.log 2>&1 &
wait
t "fuzzer and wgmma tests"
rm -rf $R/fuzz/corpus
tar czf $OUT/call3.tgz -C $OUT r
