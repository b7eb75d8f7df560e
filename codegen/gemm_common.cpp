// Batch offsets, zeros and the header title for the gemm emitters (see gemm_common.h).
#include "codegen/gemm_common.h"

#include <fmt/format.h>

#include "codegen/scalar_emit.h"
#include "ir/tile_config.h"

namespace kiln::codegen {

std::string batch_offset_code(const Shape& dims, const std::vector<int64_t>& strides, const std::string& batch) {
  std::string s;
  int64_t inner = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    if (strides[d] != 0 && dims[d] != 1) {
      std::string coord = inner == 1 ? batch : fmt::format("({} / {}u)", batch, inner);
      if (d != 0) coord = fmt::format("({} % {}u)", coord, dims[d]);
      s += fmt::format("{}(long long){} * {}ll", s.empty() ? "" : " + ", coord, strides[d]);
    }
    inner *= dims[d];
  }
  return s.empty() ? "0ll" : s;
}

std::string both_conditions(const std::string& x, const std::string& y) {
  if (x.empty()) return y;
  if (y.empty()) return x;
  return x + " && " + y;
}

std::string zero_storage(DType t) {
  const std::string type(storage_type(t));
  // A type of two words ("unsigned char") cannot be brace-initialised by name.
  return type.find(' ') == std::string::npos ? type + "{}" : "(" + type + ")0";
}

std::vector<std::string> gemm_pointer_params(const ir::Kernel& k, const std::vector<std::string>& names) {
  std::vector<std::string> params;
  for (size_t i = 0; i < k.args.size(); ++i) {
    const ir::KernelArg& a = k.args[i];
    params.push_back(
        fmt::format("{}{}* __restrict__ {}", a.is_output ? "" : "const ", storage_type(a.type.dtype), names.at(i)));
  }
  return params;
}

std::string gemm_header_title(const ir::Kernel& k) {
  const ir::GemmCore& g = k.gemm;
  // wgmma multiplies fp8 operands as stored; the other schedules widen them first.
  std::string products(ir::gemm_compute_name(g));
  if (k.config.schedule == ir::kWgmma && ir::gemm_fp8_products(k))
    products = fmt::format("{} x {}", dtype_name(*ir::gemm_fp8_operand(k, true)),
                           dtype_name(*ir::gemm_fp8_operand(k, false)));
  std::string s = fmt::format("\n// ---- kernel {}: gemm {}{} x {} x {} (M x N x K), {} products, fp32 sums ----\n",
                              k.name, g.batch.empty() ? "" : "batch " + shape_str(g.batch) + " of ", g.m, g.n, g.k,
                              products);
  s += "// Fuses:\n";
  for (const std::string& line : k.fused_nodes) s += "//   " + line + "\n";
  return s;
}

}  // namespace kiln::codegen
