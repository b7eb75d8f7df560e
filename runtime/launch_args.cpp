#include "runtime/launch_args.h"

#include <fmt/format.h>

#include "ir/error.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/helper_kernel.h"
#include "runtime/timer.h"

namespace kiln::runtime {

namespace {

CUtensorMapDataType map_dtype(DType t) {
  switch (t) {
    case DType::f16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case DType::bf16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case DType::f32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case DType::i32: return CU_TENSOR_MAP_DATA_TYPE_INT32;
    case DType::i1: case DType::i8: case DType::i4: case DType::f8e4m3: case DType::f8e5m2:
      return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  }
  return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
}

// Rows of 16-bit elements copied into rows of another length: a block per row segment
// of 2048 elements, each thread moving 8 of them (the source rows start anywhere, so
// element by element; the copy's rows start 16-byte aligned).
constexpr const char* kPitchedCopySource = R"(
extern "C" __global__ void kiln_pitched_copy16(const unsigned short* __restrict__ src, unsigned short* __restrict__ dst,
                                               unsigned long long rows, unsigned long long cols,
                                               unsigned long long src_ld, unsigned long long dst_ld) {
  for (unsigned long long row = blockIdx.y; row < rows; row += gridDim.y) {
    const unsigned long long col0 = (unsigned long long)blockIdx.x * 2048 + threadIdx.x;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const unsigned long long col = col0 + i * 256;
      if (col < cols) dst[row * dst_ld + col] = src[row * src_ld + col];
    }
  }
}
)";

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
    : staged_(launch.staged), ptrs_(ptrs) {
  for (const codegen::StagedOperand& s : staged_) {
    if (dtype_bytes(s.dtype) != 2) throw Error(fmt::format("kernel {}: only 16-bit operands are staged", kernel));
    copies_.emplace_back(static_cast<size_t>(s.rows * s.dst_ld * 2));
  }
  maps_.reserve(launch.tensor_maps.size());
  for (const codegen::TensorMapSpec& spec : launch.tensor_maps) {
    const CUdeviceptr base =
        spec.staged >= 0 ? copies_.at(static_cast<size_t>(spec.staged)).ptr() : ptrs_.at(static_cast<size_t>(spec.arg));
    maps_.push_back(encode_tensor_map(spec, base, kernel));
  }
  for (CUdeviceptr& p : ptrs_) args_.push_back(&p);
  for (CUtensorMap& m : maps_) args_.push_back(&m);
}

}  // namespace kiln::runtime

namespace kiln::runtime {

void LaunchArgs::stage(CUstream stream) const {
  for (size_t i = 0; i < staged_.size(); ++i) {
    const codegen::StagedOperand& s = staged_[i];
    CUdeviceptr src = ptrs_.at(static_cast<size_t>(s.arg)), dst = copies_[i].ptr();
    unsigned long long rows = s.rows, cols = s.cols, src_ld = s.src_ld, dst_ld = s.dst_ld;
    std::vector<void*> args = {&src, &dst, &rows, &cols, &src_ld, &dst_ld};
    const unsigned blocks_x = static_cast<unsigned>((cols + 2047) / 2048);
    const unsigned blocks_y = static_cast<unsigned>(std::min<unsigned long long>(rows, 65535));
    launch_kernel(helper_kernel(kPitchedCopySource, "kiln_pitched_copy16", Device::get().compile_target()),
                  Dim3{blocks_x, blocks_y}, Dim3{256}, 0, args, "kiln_pitched_copy16", stream);
  }
}

}  // namespace kiln::runtime
