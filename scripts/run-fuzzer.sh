#!/usr/bin/env bash
# Builds Kiln's libFuzzer targets (CMake preset `fuzz`, clang-14, ASan + UBSan) and
# runs each for SECONDS (default 30) on a copy of its seed corpus:
#   parser    the textual IR parser (tests/fuzz/parser_fuzzer.cpp; seeds tests/fuzz/corpus/,
#             a dictionary of the language's words); a crash, a hang or a
#             print -> parse -> print mismatch fails it;
#   pipeline  random valid graphs through every pass, lowering, codegen and, for a
#             sample, NVRTC and the interpreter (tests/fuzz/pipeline_fuzzer.cpp; seeds
#             tests/fuzz/pipeline-corpus/); a crash, an exception or an error that
#             names no op fails it.
# Exits non-zero when a fuzzer finds something; the input that did it is left in
# build-fuzz/fuzz-run/<fuzzer>/artifacts/. A fuzzer's final statistics (stat::number_of_executed_units)
# give its execution count.
#   usage: scripts/run-fuzzer.sh [SECONDS [parser|pipeline ...]]   (default: both)
set -euo pipefail

seconds="${1:-30}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]]; then
  echo "usage: $0 [SECONDS [parser|pipeline ...]]" >&2
  exit 2
fi
shift || true
fuzzers=("$@")
[[ ${#fuzzers[@]} -gt 0 ]] || fuzzers=(parser pipeline)

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
CUDAToolkit_ROOT="${CUDAToolkit_ROOT:-$(scripts/install-deps.sh --cuda-root 2>/dev/null || echo /usr/local/cuda)}"
export CUDAToolkit_ROOT
cmake --preset fuzz >/dev/null
targets=()
for f in "${fuzzers[@]}"; do targets+=("kiln_${f}_fuzzer"); done
cmake --build --preset fuzz --target "${targets[@]}" -j "${KILN_FUZZ_JOBS:-1}"

# fuzz NAME SEEDS_GLOB [libFuzzer flags...]: one bounded run; 0 when it found nothing.
fuzz() {
  local name="$1" seeds="$2"
  shift 2
  local run="$root/build-fuzz/fuzz-run/$name"
  rm -rf "$run/corpus"
  mkdir -p "$run/corpus" "$run/artifacts"
  # shellcheck disable=SC2086
  cp $seeds "$run/corpus/"
  echo "fuzzing the $name for ${seconds}s (corpus: $run/corpus; log: $run/fuzz.log)"
  local status=0
  "$root/build-fuzz/tests/fuzz/kiln_${name}_fuzzer" \
    -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$run/artifacts/" "$@" "$run/corpus" > "$run/fuzz.log" 2>&1 || status=$?
  # The progress lines stay in the log; show the verdict and the final statistics.
  grep -E "^(stat::|==[0-9]+==|SUMMARY|Done)" "$run/fuzz.log" | tail -n 12 || true
  if [[ $status -ne 0 ]]; then
    tail -n 40 "$run/fuzz.log"
    echo "the $name fuzzer failed (status $status); the input is in $run/artifacts/" >&2
  fi
  return $status
}

# A dictionary of the text form's words, so that the parser fuzzer builds valid lines sooner.
dict="$root/build-fuzz/fuzz-run/kiln.dict"
mkdir -p "$(dirname "$dict")"
{
  for word in func kernel return true false inf nan f32 f16 bf16 i32 i1 axis keepdim perm eps scale causal \
      approximate transpose_a transpose_b pointwise row_reduce col_reduce gemm attention '->' '//' '{}' '[]'; do
    printf '"%s"\n' "$word"
  done
  sed -n 's/^KILN_OP([A-Za-z0-9]*, "\([a-z0-9_]*\)".*/"\1"/p' ir/ops.def | sort -u
} > "$dict"

status=0
for f in "${fuzzers[@]}"; do
  case "$f" in
    parser) fuzz parser "tests/fuzz/corpus/*.kiln" -max_len=4096 -dict="$dict" || status=1 ;;
    pipeline) fuzz pipeline "tests/fuzz/pipeline-corpus/*" -max_len=1024 || status=1 ;;
    *) echo "unknown fuzzer '$f' (parser, pipeline)" >&2; exit 2 ;;
  esac
done
exit $status
