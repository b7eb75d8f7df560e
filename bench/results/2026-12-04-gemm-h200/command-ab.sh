#!/bin/bash
# H200, A/B timing of three kiln builds in turn, each from its own tree:
#   A = ac8068c (before), B = A + the bias a strip ahead (4289af5's tree),
#   C = B + the short erf GELU (1890448's tree). KILN_A, KILN_B, KILN_C name the binaries.
set -u
R=$OUT/r; mkdir -p $R/ab
export KILN_CACHE_DIR=/tmp/kc
for round in 1 2 3; do
  for v in A B C; do
    bin=$(eval echo \$KILN_$v)
    timeout 40 $bin bench gemm_bias_gelu --sizes 4096x4096x4096 --no-tune --reps 30 > $R/ab/ab-$v-$round.log 2>&1
  done
done
for v in A C; do
  bin=$(eval echo \$KILN_$v)
  timeout 60 $bin bench gemm_bias_gelu --sizes 8192x8192x8192 --no-tune --reps 30 > $R/ab/ab8192-$v.log 2>&1
done
for round in 1 2; do
  for v in A B C; do
    bin=$(eval echo \$KILN_$v)
    timeout 60 $bin run examples/matmul_bias_gelu.kiln --bench > $R/ab/example-$v-$round.log 2>&1
  done
done
# unaligned/: `kiln bench gemm --sizes 4093x4099x4097,4096x4099x4096` and `kiln bench
# gemm_bias_gelu --sizes 4093x4099x4097` before (KILN_B, no column readout) and after
# (52ec799's tree, with the word copy below) the strip's column readout, in turn, twice;
# bench-sizes-before.log is `kiln bench gemm --sizes
# 4096x4096x4096,4093x4096x4097,4096x4099x4096,4096x4096x4097,4093x4099x4097,4088x4099x4096`
# at 1890448's tree with the word copy; the ncu logs are `ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum,
# dram__bytes_write.sum --kernel-name regex:'k0|kiln_pitched' --launch-count 12 kiln run
# bench/tune/gemm_f16_4093x4099x4097.kiln --bench` with the padded copy element by element
# (in the tree) and through 16-byte words (tried, not kept).
