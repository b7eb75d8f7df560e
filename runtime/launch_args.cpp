#include "runtime/launch_args.h"

#include <fmt/format.h>

#include "ir/error.h"
#include "runtime/cuda_driver.h"

namespace kiln::runtime {

namespace {

CUtensorMapDataType map_dtype(DType t) {
  switch (t) {
    case DType::f16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case DType::bf16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case DType::f32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case DType::i32: return CU_TENSOR_MAP_DATA_TYPE_INT32;
    case DType::i1: return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  }
  return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
}

}  // namespace

CUtensorMap encode_tensor_map(const codegen::TensorMapSpec& s, CUdeviceptr base, const std::string& kernel) {
  CUtensorMap map{};
  const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  const CUresult r = driver().cuTensorMapEncodeTiled(
      &map, map_dtype(s.dtype), static_cast<cuuint32_t>(s.rank), reinterpret_cast<void*>(base), s.dims.data(),
      s.strides.data(), s.box.data(), element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw Error(fmt::format("kernel {}: cuTensorMapEncodeTiled refused the map of argument {} (rank {}, dims [{}], "
                            "byte strides [{}], box [{}], base {:#x}): {}",
                            kernel, s.arg, s.rank, fmt::join(s.dims.begin(), s.dims.begin() + s.rank, ", "),
                            fmt::join(s.strides.begin(), s.strides.begin() + s.rank - 1, ", "),
                            fmt::join(s.box.begin(), s.box.begin() + s.rank, ", "), base, cu::error_text(r)));
  return map;
}

LaunchArgs::LaunchArgs(const codegen::LaunchDims& launch, const std::vector<CUdeviceptr>& ptrs,
                       const std::string& kernel)
    : ptrs_(ptrs) {
  maps_.reserve(launch.tensor_maps.size());
  for (const codegen::TensorMapSpec& spec : launch.tensor_maps)
    maps_.push_back(encode_tensor_map(spec, ptrs_.at(static_cast<size_t>(spec.arg)), kernel));
  for (CUdeviceptr& p : ptrs_) args_.push_back(&p);
  for (CUtensorMap& m : maps_) args_.push_back(&m);
}

}  // namespace kiln::runtime
