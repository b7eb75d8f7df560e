// Batch offsets and zeros for the gemm emitter's pieces (see gemm_common.h).
#include "codegen/gemm_common.h"

#include <fmt/format.h>

#include "codegen/scalar_emit.h"

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

std::string zero_storage(DType t) { return std::string(storage_type(t)) + "{}"; }

}  // namespace kiln::codegen
