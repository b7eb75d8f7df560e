#!/usr/bin/env bash
# Runs on the GPU machine: compute-sanitizer over Kiln's kernels at small shapes.
#   memcheck, racecheck, synccheck: the GPU test binary (build/tests/kiln_gpu_tests),
#     minus the tests too large or too long under a sanitizer and those that make a
#     driver call fail on purpose (the sanitizer would report those calls);
#   initcheck: `kiln run` of the small cases in bench/sanitize/ and a kiln-difftest
#     run, so that an output element a kernel never writes is reported when the
#     output is copied back to the host.
# One log per tool and case under LOG_DIR/sanitize; exits non-zero when a tool
# reports an error. KILN_SANITIZE_TIMEOUT bounds each run (seconds, default 1800).
# KILN_SANITIZE_TOOLS picks tools (default "memcheck racecheck synccheck initcheck");
# KILN_SANITIZE_SHARDS=N splits each tool's GPU-test run into N gtest shards that run
# side by side (default 1), so that the whole suite fits a shorter stay on the machine.
# KILN_SANITIZE_TESTS narrows the GPU tests to a gtest pattern (default every `*Gpu.*`
# test), e.g. 'ColReduceGpu.*:ReduceAxesGpu.*' after a change to those kernels.
#   usage: bench/sanitize.sh [LOG_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
out="${1:-out/gpu}/sanitize"
mkdir -p "$out"
san="${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}"
if [[ ! -x "$san" ]]; then
  echo "sanitize: compute-sanitizer not found (set COMPUTE_SANITIZER); skipped"
  exit 0
fi
limit="${KILN_SANITIZE_TIMEOUT:-1800}"
tools=" ${KILN_SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck} "
shards="${KILN_SANITIZE_SHARDS:-1}"
tests="${KILN_SANITIZE_TESTS:-*Gpu.*}"
export KILN_CACHE_DIR="${KILN_CACHE_DIR:-/tmp/kiln-cache}"
skip='*Large*:*EightThousand*:AutotunerGpu.*:BenchVendorGpu.*:CublasGpu.*:*Timing*:*Bandwidth*'
skip+=':*LongRankOne*:*LongSoftmax*:*EveryCandidate*:*EveryTileCandidate*:*EveryKindOfConfig*'
skip+=':*Ceilings*'  # a bandwidth test: under a sanitizer its kernels run 100x slower
skip+=':*FailedAllocation*:*BadLaunch*:*MissingKernel*:*TooSmallBuffer*:*HostMemoryIsNotADevicePointer*'
status=0

# run NAME TOOL COMMAND...: one sanitizer run, its log, and a one-line verdict; returns
# non-zero when the tool reported an error or the run failed.
run() {
  local name="$1" tool="$2"
  shift 2
  timeout "$limit" "$san" --tool "$tool" --error-exitcode 99 --print-limit 200 --log-file "$out/$name.log" \
    "$@" > "$out/$name.out" 2>&1
  local rc=$?
  local summary
  summary=$(grep -h -E "(ERROR|RACECHECK) SUMMARY" "$out/$name.log" 2>/dev/null | tail -n 1)
  echo "compute-sanitizer $tool $name: exit $rc; ${summary:-no summary (see $out/$name.out)}"
  return $(( rc != 0 ))
}

for tool in memcheck racecheck synccheck; do
  [[ "$tools" == *" $tool "* ]] || continue
  if (( shards <= 1 )); then
    run "$tool-gpu-tests" "$tool" build/tests/kiln_gpu_tests --gtest_filter="$tests:-$skip" || status=1
    continue
  fi
  pids=()
  for ((shard = 0; shard < shards; ++shard)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$shard \
      run "$tool-gpu-tests-$shard" "$tool" build/tests/kiln_gpu_tests --gtest_filter="$tests:-$skip" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
done
if [[ "$tools" == *" initcheck "* ]]; then
  for f in bench/sanitize/*.kiln; do
    run "initcheck-$(basename "$f" .kiln)" initcheck build/bin/kiln run "$f" || status=1
  done
  run initcheck-difftest initcheck build/bin/kiln-difftest --count 100 --seconds 0 --max-elements 2048 \
    --shrink-attempts 0 --out "$out/difftest" || status=1
fi
exit $status
