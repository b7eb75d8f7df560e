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
  // A call that runs the epilogue on columns [n, n + vec) of row m of batch entry
  // `batch` with accumulators `acc` (a float[vec]); rows past M and columns past N
  // are skipped, unless `checked` is false: the caller knows them to be inside.
  std::string call(const std::string& m, const std::string& n, const std::string& acc, bool checked = true) const;
  // "%bias one vector per row segment; outputs %y 16-byte vectors" for the header.
  std::string describe() const;

private:
  enum class Mode { Vector, Uniform, Strided };
  Mode mode_of(int arg) const;
  std::string element_function() const;
  std::string vector_function() const;
  std::string index_code(const std::vector<int64_t>& coeffs, const std::string& col) const;
  std::string row_offset(int arg) const;
  std::string function_params() const;  // the vector function's parameters
  std::string type_of(int arg) const;

  const ir::Kernel& k_;
  std::vector<std::string> params_;
  int vec_ = 8;
  std::vector<int> inputs_, outputs_;  // epilogue arguments: every one but the product's operands
  std::vector<int> index_ops_;
  bool vector_stores_ = false;
};

}  // namespace kiln::codegen
