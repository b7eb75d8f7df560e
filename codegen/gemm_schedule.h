// A gemm schedule: the parts of a gemm kernel that depend on how its products run.
// The gemm emitter (gemm_emitter.cpp) writes the frame every schedule shares (the
// tile a block computes, its batch entry and K slice, the pipeline over K steps, the
// split-K exchange and the epilogue calls) and asks the schedule for the rest: its
// per-thread setup, how a K step is loaded into a shared-memory stage and multiplied,
// and where the thread's accumulators sit in the output.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "ir/kernel.h"

namespace kiln::codegen {

// Code for one vector of a thread's outputs: columns [n, n + vec) of row m (code
// expressions), with their fp32 accumulators in the float[vec] array `values`.
using VectorVisit =
    std::function<std::string(const std::string& indent, const std::string& m, const std::string& n,
                              const std::string& values)>;

class GemmSchedule {
public:
  virtual ~GemmSchedule() = default;

  // Lines for the kernel's header comment ("//   ..."), each ending in a newline.
  virtual std::string describe() const = 0;
  virtual int threads() const = 0;
  virtual int stage_bytes() const = 0;  // shared memory of one pipeline stage
  virtual int stages() const = 0;
  virtual bool async_copies() const = 0;  // whether any operand moves with cp.async
  // Per-thread setup, after the frame has defined m0, n0, batch, k_begin and k_end.
  virtual std::string setup() const = 0;
  // The accumulators' declaration, zeroed.
  virtual std::string accumulators() const = 0;
  // Loads of the K step at element `k0` into the stage at byte `stage`: started by
  // issue(), finished by commit() (empty where copies complete on their own).
  virtual std::string issue(const std::string& indent, const std::string& stage, const std::string& k0) const = 0;
  virtual std::string commit(const std::string& indent, const std::string& stage, const std::string& k0) const = 0;
  // Loads a block needs once, before the pipeline's first copies (into the same first
  // group of copies). Empty for most schedules.
  virtual std::string preload() const { return ""; }
  // A packed dequantised operand's work on the stage at byte `stage` (K step at `k0`):
  // each thread turns the packed chunks it copied itself (so its own wait for the copies
  // suffices) into the shared tile of the step being multiplied (`ahead` false) or of the
  // next one. Empty for most schedules.
  virtual std::string prepare(const std::string& indent, const std::string& stage, const std::string& k0,
                              bool ahead) const {
    (void)indent, (void)stage, (void)k0, (void)ahead;
    return "";
  }
  // When the pipeline moves on to the next K step.
  virtual std::string advance(const std::string& indent) const {
    (void)indent;
    return "";
  }
  // A stage is multiplied in k_steps() steps along K; each step's operands are first
  // loaded from shared memory into one of two register buffers ("fragments"), so that
  // the next step's loads are in flight while this step multiplies.
  virtual int k_steps() const = 0;
  virtual std::string fragments() const = 0;  // both buffers' declaration
  // Loads step `kk` of the stage at byte `stage` into buffer `buf` (code expressions
  // that are constants once the step loop is unrolled).
  virtual std::string load_fragments(const std::string& indent, const std::string& buf, const std::string& stage,
                                     const std::string& kk) const = 0;
  // Multiplies buffer `buf` into the accumulators.
  virtual std::string multiply(const std::string& indent, const std::string& buf) const = 0;
  // Columns per epilogue call.
  virtual int vec() const = 0;
  // After the main loop: every output vector of the thread with its accumulators.
  virtual std::string accumulator_walk(const VectorVisit& visit) const = 0;
  // The same vectors' positions, without values (`values` is empty): for the block
  // that sums a split K's partials.
  virtual std::string position_walk(const VectorVisit& visit) const = 0;
};

// The schedule the kernel's config names (mma_sync or simt; wgmma kernels are written by
// emit_gemm_wgmma, not through this interface).
std::unique_ptr<GemmSchedule> make_gemm_schedule(const ir::Kernel& k, const std::vector<std::string>& params);

// gemm_mma_schedule.cpp and gemm_simt_schedule.cpp.
std::unique_ptr<GemmSchedule> make_mma_schedule(const ir::Kernel& k, const std::vector<std::string>& params);
std::unique_ptr<GemmSchedule> make_simt_schedule(const ir::Kernel& k, const std::vector<std::string>& params);

}  // namespace kiln::codegen
