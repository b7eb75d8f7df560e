#!/usr/bin/env bash
# Installs the Debian packages that Kiln builds and tests with (only the missing
# ones; `apt-get update` runs only then) and checks for the CUDA toolkit, which
# Kiln needs for NVRTC and the driver API headers (no GPU is needed to build or test).
# Idempotent, and quick when everything is there.
#   usage: scripts/install-deps.sh               install and check
#          scripts/install-deps.sh --cuda-root   print the CUDA toolkit folder found
set -euo pipefail

packages=(cmake ninja-build g++ libfmt-dev libcli11-dev nlohmann-json3-dev libgtest-dev
          llvm-14-tools llvm-14-dev clang-14 libclang-rt-14-dev python3
          python3-numpy python3-matplotlib python3-dev python3-pybind11 pybind11-dev)

# The CUDA toolkit: CUDA_HOME, then CUDA_PATH, then /usr/local/cuda; it must hold
# nvcc, NVRTC's header and its library.
has_nvrtc_library() {
  compgen -G "$1/lib*/libnvrtc.so*" >/dev/null || compgen -G "$1/targets/*/lib/libnvrtc.so*" >/dev/null
}
find_cuda() {
  local dir
  for dir in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
    if [[ -n "$dir" && -x "$dir/bin/nvcc" && -f "$dir/include/nvrtc.h" ]] && has_nvrtc_library "$dir"; then
      echo "$dir"
      return 0
    fi
  done
  return 1
}

if [[ "${1:-}" == "--cuda-root" ]]; then
  find_cuda || { echo "no CUDA toolkit found (see scripts/install-deps.sh)" >&2; exit 1; }
  exit 0
fi
if [[ $# -gt 0 ]]; then
  echo "usage: $0 [--cuda-root]" >&2
  exit 2
fi

# ---- Debian packages ----
if command -v dpkg-query >/dev/null; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "install-deps: installing ${missing[*]}"
    sudo=()
    [[ "$(id -u)" -eq 0 ]] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    echo "install-deps: all ${#packages[@]} packages present"
  fi
else
  echo "install-deps: not a Debian system; install these (or their equivalents) yourself:" >&2
  echo "  ${packages[*]}" >&2
fi

# ---- CUDA toolkit ----
if cuda="$(find_cuda)"; then
  version="$("$cuda/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  echo "install-deps: CUDA toolkit ${version:-?} at $cuda"
else
  cat >&2 <<'MSG'
install-deps: no CUDA toolkit found.
  Kiln needs the CUDA toolkit (nvcc, NVRTC and the CUDA headers; 12.x or 13.x),
  looked for in $CUDA_HOME, $CUDA_PATH and /usr/local/cuda.
  - Installed elsewhere: export CUDA_HOME=/path/to/cuda and run this again.
  - Not installed: install NVIDIA's CUDA toolkit (its Debian/Ubuntu packages, e.g.
    cuda-toolkit-13-0, or its runfile installer), then run this again.
  A GPU is not needed to build and test; only to run kernels.
MSG
  exit 1
fi
