// Every environment knob Kiln reads, in one place: its name, type, default and
// meaning. Code reads knobs only through these functions.
//
//   KILN_CACHE_DIR  path    ~/.cache/kiln   compiled kernels (cubin/PTX) on disk
//   KILN_DUMP_DIR   path    (unset)         write the IR after each pass, each kernel's .cu and .ptx
//   KILN_TUNE       enum    use             off: heuristic configs only; use: tuning records
//                                           when present; refresh: re-tune and overwrite
//   KILN_TUNE_DB    path    $KILN_CACHE_DIR/tuning.json   the tuning database
//   KILN_ARCH       string  (the device's)  compile for this arch, e.g. sm_90a, with no GPU
//   KILN_DEBUG      int     0               1: kernels launched and their times, reference
//                                           matmuls run on the GPU; 2: + tile configs;
//                                           3: + IR after each pass; 4: + CUDA source
//   KILN_THREADS    int     (the cores)     threads of the CPU reference interpreter (read by
//                                           ir/parallel.cpp: the IR library has no runtime)
//   KILN_TF32       bool    0               1: f32 matmuls multiply on Tensor Cores after
//                                           rounding their operands to TF32; 0: exact f32
//   KILN_MAX_FUSED_OPS int  256             the most element-wise ops one fused kernel computes
//                                           (passes/fusion_limits.h); past it fusion starts
//                                           another kernel
#pragma once
#include <optional>
#include <string>

namespace kiln::knobs {

std::string cache_dir();
std::optional<std::string> dump_dir();
enum class TuneMode { Off, Use, Refresh };
TuneMode tune_mode();
std::string tune_db();
std::optional<std::string> arch();
int debug_level();
bool tf32();
std::optional<int> max_fused_ops();  // unset: the pass's default

// A short table of every knob with its current value (for `kiln --help` and logs).
std::string describe();

}  // namespace kiln::knobs
