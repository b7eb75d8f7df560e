// The packed path of a dequantised gemm operand (see gemm_operand_load.h): the i4 / i8
// weights travel to shared memory as they are stored, by 16-byte cp.async, as many K
// steps ahead as the pipeline has stages, so that a block keeps several times more
// bytes in flight than loads through registers can (those wait on DRAM once a step).
// Each thread dequantises the 16-byte chunks it copied itself, so its own wait for the
// copies is enough: at the start of a step it turns the next step's chunks into the
// second of two swizzled f16 / bf16 tiles while the other warps multiply, and the
// step's one barrier hands that tile to ldmatrix. The chunk's scale (and zero point)
// come from slabs that the block copies once for its K slice.
//
// Without zero points, and with scales of the product's dtype, a pair of elements
// becomes f16 / bf16 by bit tricks: an i4 nibble (or i8 byte) XOR its sign bit is the
// low mantissa of 0x4300 (bf16 128) or 0x6400 (f16 1024), one fma removes the bias
// exactly and a second multiplies by the scale, rounding once, as the graph's fp32
// product rounded to the operand dtype does. Otherwise each element is computed in fp32.
#include <fmt/format.h>

#include "codegen/gemm_common.h"
#include "codegen/gemm_operand_load.h"
#include "codegen/kernel_params.h"
#include "codegen/scalar_emit.h"
#include "ir/error.h"

namespace kiln::codegen {

namespace {

int weight_bits(const ir::Kernel& k) {
  return k.args.at(static_cast<size_t>(k.gemm.b.arg)).type.dtype == DType::i4 ? 4 : 8;
}

// Whether every chunk takes the bit tricks: no zero points, scales of the operand
// dtype, and i4 weights, or i8 into f16 (a byte does not fit bf16's 7-bit mantissa).
bool fast_chunks(const ir::Kernel& k) {
  const ir::GemmDequant& d = k.gemm.b.dequant;
  if (d.zero >= 0) return false;
  if (k.args.at(static_cast<size_t>(d.scale)).type.dtype != k.gemm.operand_dtype) return false;
  return weight_bits(k) == 4 || k.gemm.operand_dtype == DType::f16;
}

}  // namespace

std::string OperandLoad::packed_tile(const std::string& buffer) const {
  return fmt::format("({}u + {} * {}u)", ring_end_, buffer, pd_.tile_bytes);
}

std::string OperandLoad::packed_setup(const std::string& outer0) const {
  const ir::GemmOperand& op = k_.gemm.b;
  const ir::KernelArg& w = k_.args.at(static_cast<size_t>(op.arg));
  const int bits = weight_bits(k_);
  const int chunks_per_row = pd_.packed_row_bytes / 16;
  const std::string n = name();
  std::string s = fmt::format("  // {}\n", describe());
  s += fmt::format("  const int {}_outer0 = {};\n", n, outer0);
  s += fmt::format("  // The 16-byte chunk of the packed tile (rows of {} bytes) this thread copies and dequantises.\n",
                   pd_.packed_row_bytes);
  s += fmt::format("  const int {}_prow = (int)threadIdx.x / {}, {}_pchunk = (int)threadIdx.x % {};\n", n,
                   chunks_per_row, n, chunks_per_row);
  s += fmt::format("  const unsigned char* {}_psrc = reinterpret_cast<const unsigned char*>({}) + "
                   "(long long)({}_outer0 + {}_prow) * {}ll + {}_pchunk * 16;\n",
                   n, param_, n, n, k_.gemm.k * bits / 8, n);
  const int64_t groups = k_.gemm.k / op.dequant.group;
  s += fmt::format("  const int {}_group0 = {};  // the slice's first group of %{}'s rows\n", n,
                   groups == 1 ? "0" : fmt::format("k_begin / {}", op.dequant.group), w.name);
  s += fmt::format("  int {}_parity = 0;  // the dequantised tile the fragments read\n", n);
  return s;
}

std::string OperandLoad::packed_preload() const {
  const ir::GemmDequant& d = k_.gemm.b.dequant;
  const std::vector<std::string> params = param_names(k_);
  const std::string n = name();
  const int64_t groups = k_.gemm.k / d.group;
  const int64_t words = int64_t{tile_outer_} * pd_.slab_row_words;
  std::string s;
  for (int arg : {d.scale, d.zero}) {
    if (arg < 0) continue;
    const ir::KernelArg& a = k_.args.at(static_cast<size_t>(arg));
    const int es = dtype_bytes(a.type.dtype);
    const int64_t offset = ring_end_ + (arg == d.scale ? pd_.scale_offset : pd_.zero_offset);
    s += fmt::format("  // %{}: each row's groups of the slice as {} words from the word that holds its first "
                     "(zeros past the end).\n",
                     a.name, pd_.slab_row_words);
    s += fmt::format("  for (int w = (int)threadIdx.x; w < {}; w += {}) {{\n", words, threads_);
    s += fmt::format("    const int r = w / {}, j = w % {};\n", pd_.slab_row_words, pd_.slab_row_words);
    s += fmt::format("    const long long first = ((long long)({}_outer0 + r) * {}ll + {}_group0) * {}ll;\n", n, groups,
                     n, es);
    s += "    const long long at = (first & ~3ll) + j * 4ll;\n";
    s += fmt::format("    const long long left = {}ll - at;\n", k_.gemm.n * groups * es);
    s += fmt::format("    const bool in = {}_outer0 + r < {} && left > 0;\n", n, k_.gemm.n);
    s += fmt::format("    kiln_copy_async4_zfill(smem + {}u + w * 4, reinterpret_cast<const unsigned char*>({}) + "
                     "(in ? at : 0ll), in ? (unsigned)(left < 4 ? left : 4) : 0u);\n",
                     offset, params.at(static_cast<size_t>(arg)));
    s += "  }\n";
  }
  return s;
}

std::string OperandLoad::packed_issue(const std::string& in, const std::string& stage, const std::string& k0) const {
  const int bits = weight_bits(k_);
  const int chunks_per_row = pd_.packed_row_bytes / 16;
  const int chunks = tile_outer_ * chunks_per_row;
  const int per_thread = (chunks + threads_ - 1) / threads_;
  const int rows_per_pass = threads_ / chunks_per_row;
  const std::string n = name();
  const std::string guard = chunks % threads_ == 0 ? ""
                                                   : fmt::format("if (i * {} + (int)threadIdx.x < {}) ", threads_, chunks);
  std::string s = fmt::format("{}#pragma unroll\n{}for (int i = 0; i < {}; ++i) {}{{\n", in, in, per_thread, guard);
  const std::string body = in + "  ";
  std::string inside;
  if (!outer_always_in_) inside = fmt::format("{}_outer0 + {}_prow + i * {} < {}", n, n, rows_per_pass, outer_);
  if (!k_always_in_) inside = both_conditions(inside, fmt::format("{} + {}_pchunk * {} < k_end", k0, n, 128 / bits));
  const std::string src = fmt::format("{}_psrc + i * {}ll + ({}) / {}", n, int64_t{rows_per_pass} * k_.gemm.k * bits / 8,
                                      k0, 8 / bits);
  const std::string dst = fmt::format("smem + {} + ({}_prow + i * {}) * {} + {}_pchunk * 16", stage, n, rows_per_pass,
                                      pd_.packed_row_bytes, n);
  if (inside.empty()) {
    s += fmt::format("{}kiln_copy_async16_zfill({}, {}, 16);\n", body, dst, src);
  } else {
    s += fmt::format("{}const bool in = {};\n", body, inside);
    s += fmt::format("{}kiln_copy_async16_zfill({}, in ? (const void*)({}) : {}, in ? 16 : 0);\n", body, dst, src,
                     param_);
  }
  return s + in + "}\n";
}

std::string OperandLoad::packed_chunk_fast(const std::string& in, const std::string& packed,
                                           const std::string& slab_at) const {
  const bool bf16 = k_.gemm.operand_dtype == DType::bf16;
  const std::string type = bf16 ? "bf16" : "f16";
  std::string s = fmt::format("{}const unsigned s2 = 0x10001u * reinterpret_cast<const unsigned short*>(kiln_smem + {}u)[{}];\n",
                              in, ring_end_ + pd_.scale_offset, slab_at);
  if (weight_bits(k_) == 4) {
    s += fmt::format("{}const unsigned q = {};\n", in, packed);
    s += in + "const unsigned q4 = q >> 4;  // odd elements' nibbles at the bottom of each byte\n";
    s += fmt::format("{}out = make_uint4(kiln_dequant_i4x2_{}(__byte_perm(q, q4, 0x4400), s2), "
                     "kiln_dequant_i4x2_{}(__byte_perm(q, q4, 0x5511), s2),\n",
                     in, type, type);
    s += fmt::format("{}               kiln_dequant_i4x2_{}(__byte_perm(q, q4, 0x6622), s2), "
                     "kiln_dequant_i4x2_{}(__byte_perm(q, q4, 0x7733), s2));\n",
                     in, type, type);
  } else {
    s += fmt::format("{}const uint2 q = {};\n", in, packed);
    s += fmt::format("{}out = make_uint4(kiln_dequant_i8x2_f16(q.x, 0x4140, s2), kiln_dequant_i8x2_f16(q.x, 0x4342, s2),\n",
                     in);
    s += fmt::format("{}               kiln_dequant_i8x2_f16(q.y, 0x4140, s2), kiln_dequant_i8x2_f16(q.y, 0x4342, s2));\n",
                     in);
  }
  return s;
}

std::string OperandLoad::packed_chunk_float(const std::string& in, const std::string& packed,
                                            const std::string& slab_at) const {
  const ir::GemmDequant& d = k_.gemm.b.dequant;
  auto slab = [&](int arg, int64_t offset) {
    const ir::KernelArg& a = k_.args.at(static_cast<size_t>(arg));
    return load_expr(a.type.dtype, fmt::format("reinterpret_cast<const {}*>(kiln_smem + {}u)[{}]",
                                               storage_type(a.type.dtype), ring_end_ + offset, slab_at));
  };
  std::string s = fmt::format("{}const float scale = {};\n", in, slab(d.scale, pd_.scale_offset));
  s += fmt::format("{}const float zero = {};\n", in, d.zero >= 0 ? slab(d.zero, pd_.zero_offset) : "0.0f");
  std::string q;
  if (weight_bits(k_) == 4) {
    s += fmt::format("{}const unsigned q = {};\n", in, packed);
    q = "kiln_i4_value(q >> (4 * j))";
  } else {
    s += fmt::format("{}const uint2 q = {};\n", in, packed);
    q = "(int)(signed char)(unsigned char)((j < 4 ? q.x : q.y) >> (8 * (j & 3)))";
  }
  s += fmt::format("{}float v[8];\n{}#pragma unroll\n{}for (int j = 0; j < 8; ++j) v[j] = ((float){} - zero) * scale;\n",
                   in, in, in, q);
  s += fmt::format("{}out = kiln_pack8_{}(v);\n", in, k_.gemm.operand_dtype == DType::f16 ? "f16" : "bf16");
  return s;
}

std::string OperandLoad::packed_prepare(const std::string& in, const std::string& stage, const std::string& k0,
                                        const std::string& buffer) const {
  const ir::GemmDequant& d = k_.gemm.b.dequant;
  const int bits = weight_bits(k_);
  const std::string n = name();
  const int64_t groups = k_.gemm.k / d.group;
  const int chunks_per_row = pd_.packed_row_bytes / 16;
  const int chunks = tile_outer_ * chunks_per_row;
  const int per_thread = (chunks + threads_ - 1) / threads_;
  const int rows_per_pass = threads_ / chunks_per_row;
  const int parts = bits == 4 ? 4 : 2;  // chunks of 8 elements in 16 packed bytes
  const std::string guard = chunks % threads_ == 0 ? ""
                                                   : fmt::format("if (i * {} + (int)threadIdx.x < {}) ", threads_, chunks);
  std::string s = fmt::format("{}#pragma unroll\n{}for (int i = 0; i < {}; ++i) {}{{\n", in, in, per_thread, guard);
  std::string body = in + "  ";
  s += fmt::format("{}const int r = {}_prow + i * {};\n", body, n, rows_per_pass);
  // The 16 packed bytes in one load (a warp's 512 bytes in 4 wavefronts; word loads
  // of rows 32 bytes apart would meet in the same banks).
  s += fmt::format("{}const uint4 packed = *reinterpret_cast<const uint4*>(kiln_smem + {} + r * {} + {}_pchunk * 16);\n",
                   body, stage, pd_.packed_row_bytes, n);
  s += body + "const unsigned words[4] = {packed.x, packed.y, packed.z, packed.w};\n";
  s += fmt::format("{}#pragma unroll\n{}for (int e = 0; e < {}; ++e) {{\n", body, body, parts);
  body += "  ";
  s += fmt::format("{}const int c = {}_pchunk * {} + e;  // the chunk of 8 elements in the row\n", body, n, parts);
  const std::string packed = bits == 4 ? "words[e]" : "make_uint2(words[2 * e], words[2 * e + 1])";
  // The chunk's scale: row r of the slab, past the 2-byte misalignment of the row's
  // first group when the slab's elements are 2 bytes, then the chunk's group. A chunk
  // past K (a last step's tail) takes the last group's: inside the slab.
  const int es = dtype_bytes(k_.args.at(static_cast<size_t>(d.scale)).type.dtype);
  const int64_t row_elems = pd_.slab_row_words * 4 / es;
  const std::string k_at = k_always_in_ ? fmt::format("{} + c * 8", k0) : fmt::format("min({} + c * 8, k_end - 1)", k0);
  std::string slab_at = fmt::format("r * {} + {}", row_elems,
                                    groups == 1 ? "0" : fmt::format("({}) / {} - {}_group0", k_at, d.group, n));
  if (es == 2)
    slab_at += fmt::format(" + (int)((((long long)({}_outer0 + r) * {}ll + {}_group0)) & 1)", n, groups, n);
  s += body + "uint4 out;\n";
  const std::string chunk = fast_chunks(k_) ? packed_chunk_fast(body + "  ", packed, "at")
                                            : packed_chunk_float(body + "  ", packed, "at");
  s += fmt::format("{}{{\n{}  const int at = {};\n{}{}}}\n", body, body, slab_at, chunk, body);
  if (!k_always_in_)  // past K: zeros, whatever the slab holds there
    s += fmt::format("{}if ({} + c * 8 >= k_end) out = make_uint4(0u, 0u, 0u, 0u);\n", body, k0);
  s += fmt::format("{}*reinterpret_cast<uint4*>(kiln_smem + {} + {}) = out;\n", body, packed_tile(buffer),
                   tile_.offset_code("r", "c"));
  s += in + "  }\n";
  return s + in + "}\n";
}

}  // namespace kiln::codegen
