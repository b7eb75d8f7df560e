// The epilogue of a gemm kernel: the kernel's scalar body run on the accumulators,
// `vec` consecutive columns of one output row at a time. Inputs are read as the
// pointwise emitter reads them (one vector where they run contiguously along N, one
// value where they are constant along N, element by element otherwise) and outputs
// are written as one 16-byte (or wider) vector per row segment where N allows, so
// that a bias, a residual, activations, casts and several outputs cost one pass over
// registers, not a kernel each.
#pragma once
#include <string>
#include <vector>

#include "ir/kernel.h"

namespace kiln::codegen {

class GemmEpilogue {
public:
  // `params`: every kernel parameter's name (codegen::param_names); `vec`: columns per call.
  GemmEpilogue(const ir::Kernel& k, const std::vector<std::string>& params, int vec);

  // The element function and the vector function, emitted before the kernel.
  std::string functions() const;
  // Whether the outputs are written as vectors (N a multiple of `vec`, which is not 1).
  bool vector_stores() const { return vector_stores_; }
  // A call that runs the epilogue on columns [n, n + vec) of row m of batch entry
  // `batch` with accumulators `acc` (a float[vec]); rows past M and columns past N
  // are skipped, unless `checked` is false: the caller knows them to be inside.
  std::string call(const std::string& m, const std::string& n, const std::string& acc, bool checked = true) const;
  // "%bias one vector per row segment; outputs %y 16-byte vectors" for the header.
  std::string describe() const;

  // Inputs read as one vector per call whose vector does not depend on the row or the
  // batch entry (a bias along N): a caller may load them ahead (`preload`, zeros past N)
  // and pass them to `call_preloaded`, so that their loads' latency hides behind other
  // work instead of standing between a call's loads and its math.
  std::vector<int> preloadable() const;
  std::string preload(int arg, const std::string& n) const;  // the vector at column n
  std::string preloaded_type(int arg) const;
  // As `call`, with preloadable input `arg` given as the vector `prefix` + arg.
  std::string call_preloaded(const std::string& m, const std::string& n, const std::string& acc,
                             const std::string& prefix) const;

private:
  enum class Mode { Vector, Uniform, Strided };
  Mode mode_of(int arg) const;
  std::string element_function() const;
  std::string vector_function(bool preloaded) const;
  bool is_preloadable(int arg) const;
  // A call's arguments; preloadable inputs as `prefix` + arg where `prefix` is not empty.
  std::vector<std::string> call_args(const std::string& m, const std::string& n, const std::string& acc,
                                     const std::string& prefix) const;
  std::string index_code(const std::vector<int64_t>& coeffs, const std::string& col) const;
  std::string row_offset(int arg) const;
  std::string function_params(bool preloaded) const;  // the vector function's parameters
  std::string type_of(int arg) const;

  const ir::Kernel& k_;
  std::vector<std::string> params_;
  int vec_ = 8;
  std::vector<int> inputs_, outputs_;  // epilogue arguments: every one but the product's operands
  std::vector<int> index_ops_;
  bool vector_stores_ = false;
};

}  // namespace kiln::codegen
