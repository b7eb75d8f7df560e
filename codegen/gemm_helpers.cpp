// The device helpers of the gemm kernels: asynchronous copies into shared memory,
// ldmatrix fragment loads and the mma.sync Tensor Core products. Each is a thin,
// readable wrapper over one PTX instruction; a kernel's prelude holds only those it calls.
#include "codegen/gemm_helpers.h"

#include <iterator>

#include "codegen/scalar_emit.h"

namespace kiln::codegen {

namespace {

// Callees before callers; gemm_helper_definitions keeps this order.
constexpr DeviceHelper kGemmHelpers[] = {
    // A 16-byte copy from global to shared memory that bypasses registers (and L1);
    // the bytes past `src_bytes` (all 16 when it is 0) are written as zeros, so the
    // edges of a matrix read as zeros without a branch.
    {"kiln_copy_async16_zfill",
     "static __device__ __forceinline__ void kiln_copy_async16_zfill(unsigned shared_dst, const void* global_src, "
     "unsigned src_bytes) {\n"
     "  asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" :: \"r\"(shared_dst), \"l\"(global_src), "
     "\"r\"(src_bytes) : \"memory\");\n}\n"},
    // A 4-byte copy (through L1, the only way for fewer than 16 bytes) with the same
    // zero fill past `src_bytes`.
    {"kiln_copy_async4_zfill",
     "static __device__ __forceinline__ void kiln_copy_async4_zfill(unsigned shared_dst, const void* global_src, "
     "unsigned src_bytes) {\n"
     "  asm volatile(\"cp.async.ca.shared.global [%0], [%1], 4, %2;\" :: \"r\"(shared_dst), \"l\"(global_src), "
     "\"r\"(src_bytes) : \"memory\");\n}\n"},
    // Two i4 weights (the low nibbles of halves of `t`) times the scale pair `s2`, as
    // bf16 / f16 pairs: nibble ^ 8 in the low mantissa of 128 (1024) is 136 (1032) plus
    // the weight, exactly; one fma takes the bias off (exact), one multiplies, rounding once.
    {"kiln_dequant_i4x2_bf16",
     "static __device__ __forceinline__ unsigned kiln_dequant_i4x2_bf16(unsigned t, unsigned s2) {\n"
     "  const unsigned h = (t & 0x000f000fu) ^ 0x43084308u;\n  unsigned v, r;\n"
     "  asm(\"fma.rn.bf16x2 %0, %1, %2, %3;\" : \"=r\"(v) : \"r\"(h), \"r\"(0x3f803f80u), \"r\"(0xc308c308u));\n"
     "  asm(\"fma.rn.bf16x2 %0, %1, %2, %3;\" : \"=r\"(r) : \"r\"(v), \"r\"(s2), \"r\"(0x80008000u));\n"
     "  return r;\n}\n"},
    {"kiln_dequant_i4x2_f16",
     "static __device__ __forceinline__ unsigned kiln_dequant_i4x2_f16(unsigned t, unsigned s2) {\n"
     "  const unsigned h = (t & 0x000f000fu) ^ 0x64086408u;\n  unsigned v, r;\n"
     "  asm(\"fma.rn.f16x2 %0, %1, %2, %3;\" : \"=r\"(v) : \"r\"(h), \"r\"(0x3c003c00u), \"r\"(0xe408e408u));\n"
     "  asm(\"fma.rn.f16x2 %0, %1, %2, %3;\" : \"=r\"(r) : \"r\"(v), \"r\"(s2), \"r\"(0x80008000u));\n"
     "  return r;\n}\n"},
    // Two i8 weights (the bytes of `q` that `select` picks, 0x4140 or 0x4342) times `s2`
    // as f16: byte ^ 0x80 under 0x64 is 1152 plus the weight, exactly.
    {"kiln_dequant_i8x2_f16",
     "static __device__ __forceinline__ unsigned kiln_dequant_i8x2_f16(unsigned q, unsigned select, unsigned s2) {\n"
     "  const unsigned h = __byte_perm(q ^ 0x80808080u, 0x64646464u, select);\n  unsigned v, r;\n"
     "  asm(\"fma.rn.f16x2 %0, %1, %2, %3;\" : \"=r\"(v) : \"r\"(h), \"r\"(0x3c003c00u), \"r\"(0xe480e480u));\n"
     "  asm(\"fma.rn.f16x2 %0, %1, %2, %3;\" : \"=r\"(r) : \"r\"(v), \"r\"(s2), \"r\"(0x80008000u));\n"
     "  return r;\n}\n"},
    // Closes the group of copies issued since the last commit.
    {"kiln_copy_async_commit",
     "static __device__ __forceinline__ void kiln_copy_async_commit() {\n"
     "  asm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n}\n"},
    // Waits until at most N committed groups are still in flight.
    {"kiln_copy_async_wait_group",
     "template <int N> static __device__ __forceinline__ void kiln_copy_async_wait_group() {\n"
     "  asm volatile(\"cp.async.wait_group %0;\" :: \"n\"(N) : \"memory\");\n}\n"},
    // Four 8x8 matrices of 16-bit elements from shared memory, one row address per lane
    // (lanes 8i..8i+7 address matrix i); lane l receives row l / 4, elements 2 (l % 4)
    // and 2 (l % 4) + 1 of each, in r[0..3]. The _trans form delivers each matrix
    // transposed: the layout an mma operand wants from a tile stored the other way.
    {"kiln_ldmatrix_x4",
     "static __device__ __forceinline__ void kiln_ldmatrix_x4(unsigned (&r)[4], unsigned shared_addr) {\n"
     "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\"\n"
     "               : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(shared_addr) : \"memory\");\n}\n"},
    // Two 8x8 matrices (lanes 0..15 address their rows), as the first two of kiln_ldmatrix_x4.
    {"kiln_ldmatrix_x2",
     "static __device__ __forceinline__ void kiln_ldmatrix_x2(unsigned& r0, unsigned& r1, unsigned shared_addr) {\n"
     "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\"\n"
     "               : \"=r\"(r0), \"=r\"(r1) : \"r\"(shared_addr) : \"memory\");\n}\n"},
    {"kiln_ldmatrix_x4_trans",
     "static __device__ __forceinline__ void kiln_ldmatrix_x4_trans(unsigned (&r)[4], unsigned shared_addr) {\n"
     "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\"\n"
     "               : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(shared_addr) : \"memory\");\n}\n"},
    // d += a b on Tensor Cores for one warp: a 16x16 (row-major fragment, 4 registers of
    // two elements), b 16x8 (column fragment, 2 registers), d 16x8 fp32 (lane l holds
    // rows l / 4 and l / 4 + 8, columns 2 (l % 4) and 2 (l % 4) + 1). Not volatile: it
    // touches no memory, so the compiler may schedule it among the ldmatrix loads, which
    // are volatile and clobber memory to stay between the barriers that guard them.
    {"kiln_mma_f16",
     "static __device__ __forceinline__ void kiln_mma_f16(float (&d)[4], const unsigned (&a)[4], unsigned b0, "
     "unsigned b1) {\n"
     "  asm(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
     "{%8, %9}, {%0, %1, %2, %3};\"\n"
     "               : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
     "               : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b0), \"r\"(b1));\n}\n"},
    {"kiln_mma_bf16",
     "static __device__ __forceinline__ void kiln_mma_bf16(float (&d)[4], const unsigned (&a)[4], unsigned b0, "
     "unsigned b1) {\n"
     "  asm(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
     "{%8, %9}, {%0, %1, %2, %3};\"\n"
     "               : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
     "               : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b0), \"r\"(b1));\n}\n"},
    // One 16-byte store of four words (a 16-byte aligned address): written out, since a
    // uint4 assignment may be split into four 4-byte stores.
    {"kiln_store16",
     "static __device__ __forceinline__ void kiln_store16(void* p, uint4 v) {\n"
     "  asm volatile(\"st.global.v4.b32 [%0], {%1, %2, %3, %4};\" :: \"l\"(p), \"r\"(v.x), \"r\"(v.y), \"r\"(v.z), "
     "\"r\"(v.w) : \"memory\");\n}\n"},
    // An fp32 value rounded to TF32 (to nearest, ties away), as the TF32 product wants it.
    {"kiln_to_tf32",
     "static __device__ __forceinline__ unsigned kiln_to_tf32(unsigned bits) {\n"
     "  unsigned r;\n  asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(__uint_as_float(bits)));\n  return r;\n}\n"},
    // The TF32 product: a 16x8 (4 registers of one element), b 8x8 (2), d 16x8 fp32.
    {"kiln_mma_tf32",
     "static __device__ __forceinline__ void kiln_mma_tf32(float (&d)[4], const unsigned (&a)[4], unsigned b0, "
     "unsigned b1) {\n"
     "  asm(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
     "{%8, %9}, {%0, %1, %2, %3};\"\n"
     "               : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
     "               : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b0), \"r\"(b1));\n}\n"},
    // Eight fp32 values as eight f16 / bf16 in one 16-byte vector (for a shared-memory store).
    {"kiln_pack8_f16",
     "static __device__ __forceinline__ uint4 kiln_pack8_f16(const float (&v)[8]) {\n"
     "  uint4 r;\n  unsigned* w = &r.x;\n#pragma unroll\n  for (int i = 0; i < 4; ++i) {\n"
     "    const __half2 h = __floats2half2_rn(v[2 * i], v[2 * i + 1]);\n"
     "    w[i] = *reinterpret_cast<const unsigned*>(&h);\n  }\n  return r;\n}\n"},
    {"kiln_pack8_bf16",
     "static __device__ __forceinline__ uint4 kiln_pack8_bf16(const float (&v)[8]) {\n"
     "  uint4 r;\n  unsigned* w = &r.x;\n#pragma unroll\n  for (int i = 0; i < 4; ++i) {\n"
     "    const __nv_bfloat162 h = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);\n"
     "    w[i] = *reinterpret_cast<const unsigned*>(&h);\n  }\n  return r;\n}\n"},
};

}  // namespace

std::string gemm_helper_definitions(const std::string& code) {
  return called_helpers(code, kGemmHelpers, std::size(kGemmHelpers));
}

}  // namespace kiln::codegen
