#!/usr/bin/env bash
# Builds the parser's libFuzzer target (CMake preset `fuzz`, clang-14, ASan + UBSan)
# and runs it for SECONDS (default 30) on a copy of tests/fuzz/corpus. Exits non-zero
# when the fuzzer finds a crash, a hang or a print -> parse -> print mismatch; the
# input that did it is left in build-fuzz/fuzz-run/artifacts/.
#   usage: scripts/run-fuzzer.sh [SECONDS]
set -euo pipefail

seconds="${1:-30}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]]; then
  echo "usage: $0 [SECONDS]" >&2
  exit 2
fi

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target kiln_parser_fuzzer -j "${KILN_FUZZ_JOBS:-1}"

run="$root/build-fuzz/fuzz-run"
rm -rf "$run/corpus"
mkdir -p "$run/corpus" "$run/artifacts"
cp tests/fuzz/corpus/*.kiln "$run/corpus/"

# A dictionary of the language's words, so that the fuzzer builds valid lines sooner.
dict="$run/kiln.dict"
{
  for word in func kernel return true false inf nan f32 f16 bf16 i32 i1 axis keepdim perm eps scale causal \
      approximate transpose_a transpose_b pointwise row_reduce col_reduce gemm attention '->' '//' '{}' '[]'; do
    printf '"%s"\n' "$word"
  done
  sed -n 's/^KILN_OP([A-Za-z0-9]*, "\([a-z0-9_]*\)".*/"\1"/p' ir/ops.def | sort -u
} > "$dict"

echo "fuzzing the parser for ${seconds}s (corpus: $run/corpus; log: $run/fuzz.log)"
status=0
"$root/build-fuzz/tests/fuzz/kiln_parser_fuzzer" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
  -dict="$dict" -artifact_prefix="$run/artifacts/" "$run/corpus" > "$run/fuzz.log" 2>&1 || status=$?
# The fuzzer's progress lines stay in the log; show its verdict and final statistics.
grep -E "^(stat::|==[0-9]+==|SUMMARY|Done)" "$run/fuzz.log" | tail -n 12 || true
if [[ $status -ne 0 ]]; then
  tail -n 40 "$run/fuzz.log"
  echo "the parser fuzzer failed (status $status); the input is in $run/artifacts/" >&2
fi
exit $status
