// cuBLASLt through dlopen: its entry points declared with the C types of its API, the
// attribute and epilogue values they take (cuBLASLt's documented constants), and
// LtMatmul's plan-then-run. See cublaslt.h.
#include "runtime/cublaslt.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>

#include "ir/error.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/shared_library.h"

namespace kiln::runtime {

namespace {

using Handle = void*;
using CreateFn = int (*)(Handle*);
using DescCreateFn = int (*)(void** desc, int compute_type, int scale_type);
using LayoutCreateFn = int (*)(void** layout, int type, uint64_t rows, uint64_t cols, int64_t ld);
using PrefCreateFn = int (*)(void** pref);
using DestroyFn = int (*)(void* object);
using SetAttributeFn = int (*)(void* object, int attribute, const void* value, size_t bytes);

// cublasLtMatmulHeuristicResult_t: the algorithm (opaque, 8 x uint64_t), the
// workspace it needs, its status, its wave count, reserved words.
struct HeuristicResult {
  unsigned char algo[64];
  size_t workspace_size;
  int state;
  float waves_count;
  int reserved[4];
};
static_assert(sizeof(HeuristicResult) == 96, "cublasLtMatmulHeuristicResult_t is 96 bytes");

using HeuristicFn = int (*)(Handle, void* desc, void* a, void* b, void* c, void* d, void* pref, int requested,
                            HeuristicResult* results, int* returned);
using MatmulFn = int (*)(Handle, void* desc, const void* alpha, const void* a, void* a_layout, const void* b,
                         void* b_layout, const void* beta, const void* c, void* c_layout, void* d, void* d_layout,
                         const void* algo, void* workspace, size_t workspace_bytes, void* stream);

constexpr int kComputeF32 = 68;  // CUBLAS_COMPUTE_32F
constexpr int kScaleF32 = 0;     // CUDA_R_32F: alpha and beta are floats
// cublasLtMatmulDescAttributes_t
constexpr int kDescEpilogue = 7;        // CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t
constexpr int kDescBiasPointer = 8;     // CUBLASLT_MATMUL_DESC_BIAS_POINTER, const void*
constexpr int kDescBiasDataType = 26;   // CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32_t
// cublasLtMatrixLayoutAttribute_t
constexpr int kLayoutBatchCount = 5;    // CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t
constexpr int kLayoutBatchStride = 6;   // CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, int64_t
// cublasLtMatmulPreferenceAttributes_t
constexpr int kPrefMaxWorkspace = 1;    // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t
constexpr int kHeuristicAlgorithms = 8; // how many the heuristic is asked for (the first is used)

uint32_t epilogue_code(LtEpilogue e) {
  switch (e) {
    case LtEpilogue::None: return 1;       // CUBLASLT_EPILOGUE_DEFAULT
    case LtEpilogue::Bias: return 4;       // CUBLASLT_EPILOGUE_BIAS
    case LtEpilogue::GeluBias: return 36;  // CUBLASLT_EPILOGUE_GELU_BIAS = GELU (32) | BIAS (4)
  }
  return 1;
}

struct Library {
  DescCreateFn desc_create = nullptr;
  DestroyFn desc_destroy = nullptr;
  SetAttributeFn desc_set = nullptr;
  LayoutCreateFn layout_create = nullptr;
  DestroyFn layout_destroy = nullptr;
  SetAttributeFn layout_set = nullptr;
  PrefCreateFn pref_create = nullptr;
  DestroyFn pref_destroy = nullptr;
  SetAttributeFn pref_set = nullptr;
  HeuristicFn heuristic = nullptr;
  MatmulFn matmul = nullptr;
  Handle handle = nullptr;
  std::string why_not;  // empty when usable
};

template <class Fn>
bool resolve(void* so, const char* name, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(library_symbol(so, name));
  if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
  return fn != nullptr;
}

// Loaded on first use; the handle lives for the process, as cuBLAS's does.
const Library& library() {
  static const Library lib = [] {
    Library l;
    void* so = open_shared_library({"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}, &l.why_not);
    if (!so) return l;
    CreateFn create = nullptr;
    std::string missing;
    resolve(so, "cublasLtCreate", create, missing);
    resolve(so, "cublasLtMatmulDescCreate", l.desc_create, missing);
    resolve(so, "cublasLtMatmulDescDestroy", l.desc_destroy, missing);
    resolve(so, "cublasLtMatmulDescSetAttribute", l.desc_set, missing);
    resolve(so, "cublasLtMatrixLayoutCreate", l.layout_create, missing);
    resolve(so, "cublasLtMatrixLayoutDestroy", l.layout_destroy, missing);
    resolve(so, "cublasLtMatrixLayoutSetAttribute", l.layout_set, missing);
    resolve(so, "cublasLtMatmulPreferenceCreate", l.pref_create, missing);
    resolve(so, "cublasLtMatmulPreferenceDestroy", l.pref_destroy, missing);
    resolve(so, "cublasLtMatmulPreferenceSetAttribute", l.pref_set, missing);
    resolve(so, "cublasLtMatmulAlgoGetHeuristic", l.heuristic, missing);
    resolve(so, "cublasLtMatmul", l.matmul, missing);
    if (!missing.empty()) {
      l.why_not = "cuBLASLt lacks " + missing;
      return l;
    }
    l.why_not = primary_context_problem();  // the context the handle runs in
    if (!l.why_not.empty()) return l;
    if (int status = create(&l.handle); status != 0) l.why_not = "cublasLtCreate failed: " + cublas_status_text(status);
    return l;
  }();
  return lib;
}

void check(int status, const std::string& what) {
  if (status != 0) throw Error(fmt::format("{} failed: {}", what, cublas_status_text(status)));
}

}  // namespace

std::string_view lt_epilogue_name(LtEpilogue e) {
  switch (e) {
    case LtEpilogue::None: return "DEFAULT";
    case LtEpilogue::Bias: return "BIAS";
    case LtEpilogue::GeluBias: return "GELU_BIAS";
  }
  return "?";
}

bool LtMatmul::available(std::string* why) {
  const Library& l = library();
  if (why) *why = l.why_not;
  return l.why_not.empty();
}

LtMatmul::LtMatmul(const GemmProblem& p, LtEpilogue epilogue, CUdeviceptr bias, size_t workspace_bytes)
    : problem_(p), epilogue_(epilogue) {
  const Library& l = library();
  if (!l.why_not.empty()) throw Error("cuBLASLt cannot be used: " + l.why_not);
  const std::string what = fmt::format("cuBLASLt {} {}", lt_epilogue_name(epilogue), p.str());
  const ColumnMajorGemm g = column_major(p);
  const int in = cuda_data_type(p.input), out = cuda_data_type(p.output);
  try {
    check(l.desc_create(&desc_, kComputeF32, kScaleF32), what + ": cublasLtMatmulDescCreate");
    const uint32_t code = epilogue_code(epilogue);
    check(l.desc_set(desc_, kDescEpilogue, &code, sizeof code), what + ": setting the epilogue");
    if (epilogue != LtEpilogue::None) {
      const int32_t bias_type = out;
      check(l.desc_set(desc_, kDescBiasDataType, &bias_type, sizeof bias_type), what + ": setting the bias type");
      if (bias) set_bias(bias);
    }
    // Column-major views: cuBLASLt's A is our B (N x K), its B our A (K x M), C/D N x M.
    check(l.layout_create(&layout_a_, in, static_cast<uint64_t>(g.m), static_cast<uint64_t>(g.k), g.lda),
          what + ": the layout of B");
    check(l.layout_create(&layout_b_, in, static_cast<uint64_t>(g.k), static_cast<uint64_t>(g.n), g.ldb),
          what + ": the layout of A");
    check(l.layout_create(&layout_c_, out, static_cast<uint64_t>(g.m), static_cast<uint64_t>(g.n), g.ldc),
          what + ": the layout of C");
    if (p.batch > 1) {
      const int32_t count = static_cast<int32_t>(p.batch);
      const int64_t strides[3] = {g.stride_a, g.stride_b, g.stride_c};
      void* layouts[3] = {layout_a_, layout_b_, layout_c_};
      for (int i = 0; i < 3; ++i) {
        check(l.layout_set(layouts[i], kLayoutBatchCount, &count, sizeof count), what + ": the batch count");
        check(l.layout_set(layouts[i], kLayoutBatchStride, &strides[i], sizeof strides[i]), what + ": a batch stride");
      }
    }
    void* pref = nullptr;
    check(l.pref_create(&pref), what + ": cublasLtMatmulPreferenceCreate");
    const uint64_t max_workspace = workspace_bytes;
    int status = l.pref_set(pref, kPrefMaxWorkspace, &max_workspace, sizeof max_workspace);
    HeuristicResult results[kHeuristicAlgorithms] = {};
    int returned = 0;
    if (status == 0)
      status = l.heuristic(l.handle, desc_, layout_a_, layout_b_, layout_c_, layout_c_, pref, kHeuristicAlgorithms,
                           results, &returned);
    l.pref_destroy(pref);
    check(status, what + ": cublasLtMatmulAlgoGetHeuristic");
    if (returned < 1 || results[0].state != 0)
      throw Error(fmt::format("{}: cuBLASLt's heuristic has no algorithm for it", what));
    std::memcpy(algo_, results[0].algo, sizeof algo_);
    workspace_used_ = results[0].workspace_size;
    if (workspace_used_ > 0) workspace_ = DeviceBuffer(workspace_used_);
    config_ = fmt::format("cuBLASLt {}, heuristic's first of {} algorithm(s), workspace {:.1f} of {} MiB",
                          lt_epilogue_name(epilogue), returned, static_cast<double>(workspace_used_) / (1 << 20),
                          workspace_bytes >> 20);
  } catch (...) {
    release();  // the descriptors made so far: no destructor runs for a constructor that throws
    throw;
  }
}

LtMatmul::~LtMatmul() { release(); }

void LtMatmul::release() noexcept {
  const Library& l = library();
  if (layout_c_) l.layout_destroy(layout_c_);
  if (layout_b_) l.layout_destroy(layout_b_);
  if (layout_a_) l.layout_destroy(layout_a_);
  if (desc_) l.desc_destroy(desc_);
  layout_a_ = layout_b_ = layout_c_ = desc_ = nullptr;
}

void LtMatmul::set_bias(CUdeviceptr bias) {
  const void* ptr = reinterpret_cast<const void*>(bias);
  check(library().desc_set(desc_, kDescBiasPointer, &ptr, sizeof ptr),
        fmt::format("cuBLASLt {} {}: setting the bias pointer", lt_epilogue_name(epilogue_), problem_.str()));
  bias_set_ = bias;
}

void LtMatmul::run(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUdeviceptr bias) {
  const Library& l = library();
  const std::string_view name = lt_epilogue_name(epilogue_);
  if (epilogue_ != LtEpilogue::None && bias != bias_set_) {
    if (!bias) throw Error(fmt::format("cuBLASLt {} {}: the epilogue needs a bias", name, problem_.str()));
    set_bias(bias);
  }
  const float alpha = 1.0f, beta = 0.0f;
  void* d = reinterpret_cast<void*>(c);
  check(l.matmul(l.handle, desc_, &alpha, reinterpret_cast<const void*>(b), layout_a_,
                 reinterpret_cast<const void*>(a), layout_b_, &beta, d, layout_c_, d, layout_c_, algo_,
                 workspace_used_ > 0 ? reinterpret_cast<void*>(workspace_.ptr()) : nullptr, workspace_used_,
                 cu::launch_stream(nullptr)),  // captured into a CUDA graph when timed in one
        fmt::format("cublasLtMatmul({} {})", name, problem_.str()));
}

}  // namespace kiln::runtime
