#include "codegen/integer_reduce.h"

#include <fmt/format.h>

#include <iterator>

#include "codegen/scalar_emit.h"
#include "ir/dtype.h"

namespace kiln::codegen {

using ir::OpKind;

namespace {

// Butterflies over W lanes, then one slot per warp in shared memory read back in a
// fixed order, then (sm_90 clusters) one slot per block: the float helpers' shapes
// (scalar_emit.cpp) on integers. Shared slots are 64-bit so that one array serves the
// int max / min and the long long sum.
constexpr DeviceHelper kIntegerHelpers[] = {
    {"kiln_warp_isum",
     "template <int W, class T> static __device__ __forceinline__ T kiln_warp_isum(T v) {\n"
     "#pragma unroll\n  for (int o = W / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);\n"
     "  return v;\n}\n"},
    {"kiln_warp_imax",
     "template <int W, class T> static __device__ __forceinline__ T kiln_warp_imax(T v) {\n"
     "#pragma unroll\n  for (int o = W / 2; o > 0; o /= 2) {\n"
     "    const T u = __shfl_xor_sync(0xffffffffu, v, o);\n    v = u > v ? u : v;\n  }\n  return v;\n}\n"},
    {"kiln_warp_imin",
     "template <int W, class T> static __device__ __forceinline__ T kiln_warp_imin(T v) {\n"
     "#pragma unroll\n  for (int o = W / 2; o > 0; o /= 2) {\n"
     "    const T u = __shfl_xor_sync(0xffffffffu, v, o);\n    v = u < v ? u : v;\n  }\n  return v;\n}\n"},
    {"kiln_block_isum",
     "template <int W, class T> static __device__ __forceinline__ T kiln_block_isum(T v, long long* slots) {\n"
     "  v = kiln_warp_isum<32>(v);\n  if (threadIdx.x % 32 == 0) slots[threadIdx.x / 32] = v;\n  __syncthreads();\n"
     "  T r = (T)slots[0];\n#pragma unroll\n  for (int i = 1; i < W / 32; ++i) r += (T)slots[i];\n  return r;\n}\n"},
    {"kiln_block_imax",
     "template <int W, class T> static __device__ __forceinline__ T kiln_block_imax(T v, long long* slots) {\n"
     "  v = kiln_warp_imax<32>(v);\n  if (threadIdx.x % 32 == 0) slots[threadIdx.x / 32] = v;\n  __syncthreads();\n"
     "  T r = (T)slots[0];\n#pragma unroll\n  for (int i = 1; i < W / 32; ++i) r = (T)slots[i] > r ? (T)slots[i] : r;\n"
     "  return r;\n}\n"},
    {"kiln_block_imin",
     "template <int W, class T> static __device__ __forceinline__ T kiln_block_imin(T v, long long* slots) {\n"
     "  v = kiln_warp_imin<32>(v);\n  if (threadIdx.x % 32 == 0) slots[threadIdx.x / 32] = v;\n  __syncthreads();\n"
     "  T r = (T)slots[0];\n#pragma unroll\n  for (int i = 1; i < W / 32; ++i) r = (T)slots[i] < r ? (T)slots[i] : r;\n"
     "  return r;\n}\n"},
    {"kiln_cluster_iput",  // slot[rank] = v in every block of the cluster
     "template <int C> static __device__ __forceinline__ void kiln_cluster_iput(long long* slot, long long v) {\n"
     "  if (threadIdx.x < C) {\n"
     "    const unsigned local = (unsigned)__cvta_generic_to_shared(slot + blockIdx.x % C);\n"
     "    unsigned remote;\n"
     "    asm volatile(\"mapa.shared::cluster.u32 %0, %1, %2;\" : \"=r\"(remote) : \"r\"(local), \"r\"(threadIdx.x));\n"
     "    asm volatile(\"st.shared::cluster.s64 [%0], %1;\" :: \"r\"(remote), \"l\"(v) : \"memory\");\n"
     "  }\n}\n"},
    {"kiln_cluster_isum",
     "template <int C, class T> static __device__ __forceinline__ T kiln_cluster_isum(T v, long long* slot) {\n"
     "  kiln_cluster_iput<C>(slot, v);\n  kiln_cluster_sync();\n"
     "  return kiln_warp_isum<C>((T)slot[threadIdx.x % C]);\n}\n"},
    {"kiln_cluster_imax",
     "template <int C, class T> static __device__ __forceinline__ T kiln_cluster_imax(T v, long long* slot) {\n"
     "  kiln_cluster_iput<C>(slot, v);\n  kiln_cluster_sync();\n"
     "  return kiln_warp_imax<C>((T)slot[threadIdx.x % C]);\n}\n"},
    {"kiln_cluster_imin",
     "template <int C, class T> static __device__ __forceinline__ T kiln_cluster_imin(T v, long long* slot) {\n"
     "  kiln_cluster_iput<C>(slot, v);\n  kiln_cluster_sync();\n"
     "  return kiln_warp_imin<C>((T)slot[threadIdx.x % C]);\n}\n"},
};

}  // namespace

bool is_integer_reduce(const ir::ScalarOp& op) { return op.kind == ir::ScalarKind::Reduce && is_integer(op.dtype); }

std::string_view integer_accumulator(OpKind op) { return op == OpKind::ReduceSum ? "long long" : "int"; }

std::string integer_identity(OpKind op) {
  if (op == OpKind::ReduceMax) return "(-2147483647 - 1)";
  if (op == OpKind::ReduceMin) return "2147483647";
  return "0ll";
}

std::string integer_combine(OpKind op, const std::string& acc, const std::string& v) {
  if (op == OpKind::ReduceMax) return fmt::format("({1} > {0} ? {1} : {0})", acc, v);
  if (op == OpKind::ReduceMin) return fmt::format("({1} < {0} ? {1} : {0})", acc, v);
  return fmt::format("{} + {}", acc, v);
}

std::string integer_result(OpKind op, const std::string& acc) {
  return op == OpKind::ReduceSum ? fmt::format("kiln_sat_i32({})", acc) : fmt::format("(int){}", acc);
}

std::string integer_combiner(OpKind op) {
  return op == OpKind::ReduceMax ? "imax" : op == OpKind::ReduceMin ? "imin" : "isum";
}

std::string integer_reduce_helpers(const std::string& code) {
  return called_helpers(code, kIntegerHelpers, std::size(kIntegerHelpers));
}

}  // namespace kiln::codegen
