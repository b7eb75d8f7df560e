#!/usr/bin/env bash
# Differential testing on the GPU: build/bin/kiln-difftest makes random graphs for a
# time budget, runs each on the GPU against the reference interpreter, and shrinks
# every failure to a small .kiln reproducer in LOG_DIR (default out/difftest).
# Without a GPU it says so and checks the compile path only. Further arguments go to
# kiln-difftest (--seed, --count, --max-ops, --max-elements, --save-outputs to keep the
# GPU's outputs of every graph it had to judge, for `kiln-difftest --rejudge LOG_DIR`
# without a GPU, ...). The reproducers are also packed into LOG_DIR/reproducers.tar.gz.
#   usage: bench/difftest.sh [SECONDS [LOG_DIR [kiln-difftest arguments...]]]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
seconds="${1:-600}"
out="${2:-out/difftest}"
shift 2 || shift $#
mkdir -p "$out"
export KILN_CACHE_DIR="${KILN_CACHE_DIR:-/tmp/kiln-cache}"
build/bin/kiln-difftest --seconds "$seconds" --out "$out" "$@" 2>&1 | tee "$out/difftest.log"
status=${PIPESTATUS[0]}
for f in "$out"/seed-*.kiln; do [[ -e "$f" ]] && echo "reproducer: $f"; done
# One file with every reproducer, for machines that hand back few files.
if compgen -G "$out/seed-*.kiln" > /dev/null; then
  (cd "$out" && tar czf reproducers.tar.gz seed-*.kiln) && echo "reproducers: $out/reproducers.tar.gz"
fi
exit "$status"
