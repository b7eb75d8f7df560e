// The gemm kernels' device helpers (cp.async, ldmatrix, mma.sync): the definitions a
// generated kernel calls, for its file's prelude.
#pragma once
#include <string>

namespace kiln::codegen {

// The definitions of the gemm helpers (kiln_ldmatrix_x4, kiln_mma_f16, ...) that
// `code` calls, callees first.
std::string gemm_helper_definitions(const std::string& code);
// The same for the wgmma kernels' helpers (mbarriers, TMA loads, wgmma fences;
// codegen/gemm_wgmma_helpers.cpp).
std::string gemm_wgmma_helper_definitions(const std::string& code);

}  // namespace kiln::codegen
