// cuBLAS through dlopen: the entry points Kiln calls, declared with the C types of
// cuBLAS's API, and the numeric values of the enums they take (cuBLAS's documented
// constants). See cublas.h for the row-major mapping.
#include "runtime/cublas.h"

#include <fmt/format.h>

#include <limits>

#include "ir/error.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/shared_library.h"

namespace kiln::runtime {

namespace {

using Handle = void*;
using CreateFn = int (*)(Handle*);
using SetStreamFn = int (*)(Handle, CUstream);
// cublasGemmEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb,
//              beta, C, Ctype, ldc, computeType, algo)
using GemmExFn = int (*)(Handle, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                         const void*, void*, int, int, int, int);
// cublasGemmStridedBatchedEx: as GemmEx with a stride after each ld and batchCount before computeType.
using GemmStridedBatchedExFn = int (*)(Handle, int, int, int, int, int, const void*, const void*, int, int, long long,
                                       const void*, int, int, long long, const void*, void*, int, int, long long, int,
                                       int, int);

constexpr int kOpN = 0;           // CUBLAS_OP_N
constexpr int kOpT = 1;           // CUBLAS_OP_T
constexpr int kComputeF32 = 68;   // CUBLAS_COMPUTE_32F: fp32 accumulation, no TF32 down-conversion
constexpr int kDefaultAlgo = -1;  // CUBLAS_GEMM_DEFAULT

struct Library {
  CreateFn create = nullptr;
  SetStreamFn set_stream = nullptr;
  GemmExFn gemm = nullptr;
  GemmStridedBatchedExFn gemm_batched = nullptr;
  Handle handle = nullptr;
  std::string why_not;  // empty when usable
};

// Loaded on first use; the handle lives for the process (destroying it from a static
// destructor would race the driver's own teardown at exit).
const Library& library() {
  static const Library lib = [] {
    Library l;
    void* so = open_shared_library({"libcublas.so.13", "libcublas.so.12", "libcublas.so"}, &l.why_not);
    if (!so) return l;
    l.create = reinterpret_cast<CreateFn>(library_symbol(so, "cublasCreate_v2"));
    l.set_stream = reinterpret_cast<SetStreamFn>(library_symbol(so, "cublasSetStream_v2"));
    l.gemm = reinterpret_cast<GemmExFn>(library_symbol(so, "cublasGemmEx"));
    l.gemm_batched = reinterpret_cast<GemmStridedBatchedExFn>(library_symbol(so, "cublasGemmStridedBatchedEx"));
    if (!l.create || !l.set_stream || !l.gemm || !l.gemm_batched) {
      l.why_not = "cuBLAS lacks cublasCreate_v2, cublasSetStream_v2, cublasGemmEx or cublasGemmStridedBatchedEx";
      return l;
    }
    l.why_not = primary_context_problem();  // the context the handle runs in
    if (!l.why_not.empty()) return l;
    if (int status = l.create(&l.handle); status != 0) l.why_not = "cublasCreate failed: " + cublas_status_text(status);
    return l;
  }();
  return lib;
}

int checked_int(int64_t v, const char* what, const GemmProblem& p) {
  if (v < 1 || v > std::numeric_limits<int>::max())
    throw Error(fmt::format("cuBLAS GEMM {}: {} = {} does not fit cuBLAS's int", p.str(), what, v));
  return static_cast<int>(v);
}

}  // namespace

std::string GemmProblem::str() const {
  if (batch > 1) return fmt::format("{} {}x{}x{}x{}", dtype_name(input), batch, m, n, k);
  return fmt::format("{} {}x{}x{}{}", dtype_name(input), m, n, k, b_transposed ? " (B stored [N, K])" : "");
}

ColumnMajorGemm column_major(const GemmProblem& p) {
  ColumnMajorGemm c;
  checked_int(p.batch, "the batch count", p);
  c.m = checked_int(p.n, "N", p);
  c.n = checked_int(p.m, "M", p);
  c.k = checked_int(p.k, "K", p);
  c.lda = p.b_transposed ? c.k : c.m;  // B [K, N] row-major is B^T [N, K] column-major, leading dim N
                                      // (B [N, K] row-major is [K, N] column-major: transposed, leading dim K)
  c.ldb = c.k;  // A [M, K] row-major is A^T [K, M] column-major, leading dim K
  c.ldc = c.m;  // C [M, N] row-major is C^T [N, M] column-major, leading dim N
  c.stride_a = static_cast<long long>(p.k) * p.n;
  c.stride_b = static_cast<long long>(p.m) * p.k;
  c.stride_c = static_cast<long long>(p.m) * p.n;
  return c;
}

int cuda_data_type(DType t) {
  switch (t) {
    case DType::f32: return 0;    // CUDA_R_32F
    case DType::f16: return 2;    // CUDA_R_16F
    case DType::bf16: return 14;  // CUDA_R_16BF
    default: break;
  }
  throw Error(fmt::format("cuBLAS GEMMs take f16, bf16 or f32, not {}", dtype_name(t)));
}

std::string cublas_status_text(int status) {
  const char* name = "an unknown status";
  switch (status) {
    case 0: name = "CUBLAS_STATUS_SUCCESS"; break;
    case 1: name = "CUBLAS_STATUS_NOT_INITIALIZED"; break;
    case 3: name = "CUBLAS_STATUS_ALLOC_FAILED"; break;
    case 7: name = "CUBLAS_STATUS_INVALID_VALUE"; break;
    case 8: name = "CUBLAS_STATUS_ARCH_MISMATCH"; break;
    case 11: name = "CUBLAS_STATUS_MAPPING_ERROR"; break;
    case 13: name = "CUBLAS_STATUS_EXECUTION_FAILED"; break;
    case 14: name = "CUBLAS_STATUS_INTERNAL_ERROR"; break;
    case 15: name = "CUBLAS_STATUS_NOT_SUPPORTED"; break;
    case 16: name = "CUBLAS_STATUS_LICENSE_ERROR"; break;
  }
  return fmt::format("{} ({})", name, status);
}

bool Cublas::available(std::string* why) {
  const Library& l = library();
  if (why) *why = l.why_not;
  return l.why_not.empty();
}

Cublas& Cublas::get() {
  const Library& l = library();
  if (!l.why_not.empty()) throw Error("cuBLAS cannot be used: " + l.why_not);
  static Cublas cublas;
  cublas.handle_ = l.handle;
  return cublas;
}

void Cublas::gemm(const GemmProblem& p, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c) const {
  const Library& l = library();
  const ColumnMajorGemm g = column_major(p);
  const int in = cuda_data_type(p.input), out = cuda_data_type(p.output);
  const float alpha = 1.0f, beta = 0.0f;
  const void* their_a = reinterpret_cast<const void*>(b);  // swapped: see cublas.h
  const void* their_b = reinterpret_cast<const void*>(a);
  void* their_c = reinterpret_cast<void*>(c);
  // The runtime's launch stream, so that a product captured into a CUDA graph is in it.
  int status = l.set_stream(handle_, cu::launch_stream(nullptr));
  if (status != 0) throw Error("cublasSetStream failed: " + cublas_status_text(status));
  const int op_a = p.b_transposed ? kOpT : kOpN;  // cuBLAS's A is our B
  if (p.batch == 1)
    status = l.gemm(handle_, op_a, kOpN, g.m, g.n, g.k, &alpha, their_a, in, g.lda, their_b, in, g.ldb, &beta, their_c,
                    out, g.ldc, kComputeF32, kDefaultAlgo);
  else
    status = l.gemm_batched(handle_, op_a, kOpN, g.m, g.n, g.k, &alpha, their_a, in, g.lda, g.stride_a, their_b, in,
                            g.ldb, g.stride_b, &beta, their_c, out, g.ldc, g.stride_c, static_cast<int>(p.batch),
                            kComputeF32, kDefaultAlgo);
  if (status != 0)
    throw Error(fmt::format("{}({} -> {}) failed: {}", p.batch == 1 ? "cublasGemmEx" : "cublasGemmStridedBatchedEx",
                            p.str(), dtype_name(p.output), cublas_status_text(status)));
}

}  // namespace kiln::runtime
