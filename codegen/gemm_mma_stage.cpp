// The mma_sync math stage (see gemm_mma_stage.h). Fragment layouts (PTX ISA, mma
// m16n8k16 / m16n8k8): with g = lane / 4 and t = lane % 4, A's registers hold rows g
// and g + 8 at K columns from 2t (f16: pairs) or t (TF32), the second half of K in
// a[2], a[3]; B's hold K rows 2t (or t) and the second half in b1, at column g.
// ldmatrix.x4 fills four such registers at once, one 8 x 8 matrix of 16-bit elements
// each; lane l gives the address of row l % 8 of matrix l / 8.
#include "codegen/gemm_mma_stage.h"

#include <fmt/format.h>

#include "ir/error.h"

namespace kiln::codegen {

MmaStage::MmaStage(const ir::Kernel& k, const OperandLoad& a, const OperandLoad& b) : k_(k), a_(a), b_(b) {
  const ir::TileConfig& c = k.config;
  wm_ = c.bm / c.warps_m;
  wn_ = c.bn / c.warps_n;
  const int k_bytes = c.bk * dtype_bytes(k.gemm.operand_dtype);
  k_steps_ = k_bytes / 32;  // every product reads 32 bytes of K per row
}

std::string MmaStage::describe() const {
  return tf32() ? "mma.sync m16n8k8 TF32 (operands rounded with cvt.rna.tf32)"
                : fmt::format("mma.sync m16n8k16 {}", dtype_name(k_.gemm.operand_dtype));
}

std::string MmaStage::setup() const {
  std::string s = "  // Fragment addresses: per K step (K-contiguous tiles) or per fragment (transposed loads).\n";
  const SharedTile& ta = a_.tile();
  const SharedTile& tb = b_.tile();
  if (a_.k_contiguous()) {
    s += fmt::format("  unsigned a_frag[{}];\n#pragma unroll\n  for (int kk = 0; kk < {}; ++kk) a_frag[kk] = {};\n",
                     k_steps_, k_steps_, ta.offset_code(fmt::format("warp_m * {} + (lane & 15)", wm_), "kk * 2 + (lane >> 4)"));
  } else if (!tf32()) {
    s += fmt::format("  unsigned a_frag[{}];\n#pragma unroll\n  for (int mi = 0; mi < {}; ++mi) a_frag[mi] = {};\n",
                     frag_rows(), frag_rows(),
                     ta.offset_code("(lane & 7) + ((lane >> 4) << 3)",
                                    fmt::format("(warp_m * {} + mi * 16) / 8 + ((lane >> 3) & 1)", wm_)));
  }
  if (b_.k_contiguous()) {
    s += fmt::format("  unsigned b_frag[{}];\n#pragma unroll\n  for (int kk = 0; kk < {}; ++kk) b_frag[kk] = {};\n",
                     k_steps_, k_steps_,
                     tb.offset_code(fmt::format("warp_n * {} + (lane & 7) + ((lane >> 4) << 3)", wn_),
                                    "kk * 2 + ((lane >> 3) & 1)"));
  } else if (!tf32()) {
    s += fmt::format("  unsigned b_frag[{}];\n#pragma unroll\n  for (int nj = 0; nj < {}; ++nj) b_frag[nj] = {};\n",
                     frag_cols() / 2, frag_cols() / 2,
                     tb.offset_code("(lane & 7) + (((lane >> 3) & 1) << 3)",
                                    fmt::format("(warp_n * {} + nj * 16) / 8 + (lane >> 4)", wn_)));
  }
  return s;
}

namespace {

// A 32-bit word of `tile` at (row, col) in elements of `esize` bytes, as code.
std::string word_offset(const SharedTile& tile, const std::string& row, const std::string& col) {
  const int per_chunk = 16 / tile.esize;
  return fmt::format("({} + ((({}) % {}) * {}))", tile.offset_code(row, fmt::format("({}) / {}", col, per_chunk)), col,
                     per_chunk, tile.esize);
}

}  // namespace

std::string MmaStage::fragments() const {
  return fmt::format("  unsigned af[2][{}][4], bf[2][{}][4];  // two K steps of fragments: one loading, one multiplying\n",
                     frag_rows(), frag_cols() / 2);
}

std::string MmaStage::load_a(const std::string& in, const std::string& buf, const std::string& stage,
                             const std::string& kk) const {
  const SharedTile& t = a_.tile();
  const std::string frag = fmt::format("af[{}][mi]", buf);
  if (a_.k_contiguous())
    return fmt::format("{}for (int mi = 0; mi < {}; ++mi) kiln_ldmatrix_x4({}, smem + {} + a_frag[{}] + mi * {});\n", in,
                       frag_rows(), frag, stage, kk, 16 * t.row_bytes());
  if (!tf32())
    return fmt::format("{}for (int mi = 0; mi < {}; ++mi) kiln_ldmatrix_x4_trans({}, smem + {} + a_frag[mi] + ({}) * {});\n",
                       in, frag_rows(), frag, stage, kk, 16 * t.row_bytes());
  // TF32, M contiguous: (m = g (+8), k = t (+4)) one word at a time.
  std::string s = fmt::format("{}for (int mi = 0; mi < {}; ++mi) {{\n", in, frag_rows());
  for (int r = 0; r < 4; ++r) {
    const std::string row = fmt::format("({}) * 8 + (lane & 3){}", kk, r >= 2 ? " + 4" : "");
    const std::string col = fmt::format("warp_m * {} + mi * 16 + (lane >> 2){}", wm_, r % 2 ? " + 8" : "");
    s += fmt::format("{}  {}[{}] = *reinterpret_cast<const unsigned*>(kiln_smem + {} + {});\n", in, frag, r, stage,
                     word_offset(t, row, col));
  }
  return s + in + "}\n";
}

std::string MmaStage::load_b(const std::string& in, const std::string& buf, const std::string& stage,
                             const std::string& kk) const {
  const SharedTile& t = b_.tile();
  const std::string frag = fmt::format("bf[{}][nj]", buf);
  if (b_.k_contiguous())
    return fmt::format("{}for (int nj = 0; nj < {}; ++nj) kiln_ldmatrix_x4({}, smem + {} + b_frag[{}] + nj * {});\n", in,
                       frag_cols() / 2, frag, stage, kk, 16 * t.row_bytes());
  if (!tf32())
    return fmt::format(
        "{}for (int nj = 0; nj < {}; ++nj) kiln_ldmatrix_x4_trans({}, smem + {} + b_frag[nj] + ({}) * {});\n", in,
        frag_cols() / 2, frag, stage, kk, 16 * t.row_bytes());
  // TF32, N contiguous: b0 = (k = t, n = g), b1 = (k = t + 4, n = g), for two n8 fragments.
  std::string s = fmt::format("{}for (int nj = 0; nj < {}; ++nj) {{\n", in, frag_cols() / 2);
  for (int r = 0; r < 4; ++r) {
    const std::string row = fmt::format("({}) * 8 + (lane & 3){}", kk, r % 2 ? " + 4" : "");
    const std::string col = fmt::format("warp_n * {} + nj * 16 + (lane >> 2){}", wn_, r >= 2 ? " + 8" : "");
    s += fmt::format("{}  {}[{}] = *reinterpret_cast<const unsigned*>(kiln_smem + {} + {});\n", in, frag, r, stage,
                     word_offset(t, row, col));
  }
  return s + in + "}\n";
}

std::string MmaStage::load(const std::string& in, const std::string& buf, const std::string& a_stage,
                           const std::string& b_stage, const std::string& kk) const {
  std::string s = in + "#pragma unroll\n" + load_a(in, buf, a_stage, kk);
  s += in + "#pragma unroll\n" + load_b(in, buf, b_stage, kk);
  if (tf32()) {  // fp32 bits rounded to TF32 once, as they reach registers
    s += fmt::format("{}#pragma unroll\n{}for (int r = 0; r < 4; ++r) {{\n", in, in);
    s += fmt::format("{}  for (int mi = 0; mi < {}; ++mi) af[{}][mi][r] = kiln_to_tf32(af[{}][mi][r]);\n", in,
                     frag_rows(), buf, buf);
    s += fmt::format("{}  for (int nj = 0; nj < {}; ++nj) bf[{}][nj][r] = kiln_to_tf32(bf[{}][nj][r]);\n", in,
                     frag_cols() / 2, buf, buf);
    s += in + "}\n";
  }
  return s;
}

std::string MmaStage::multiply(const std::string& in, const std::string& buf) const {
  const char* mma = tf32() ? "kiln_mma_tf32" : k_.gemm.operand_dtype == DType::bf16 ? "kiln_mma_bf16" : "kiln_mma_f16";
  std::string s = fmt::format("{}#pragma unroll\n{}for (int mi = 0; mi < {}; ++mi)\n", in, in, frag_rows());
  s += fmt::format("{}#pragma unroll\n{}  for (int ni = 0; ni < {}; ++ni)\n", in, in, frag_cols());
  s += fmt::format("{}    {}(acc[mi][ni], af[{}][mi], bf[{}][ni >> 1][(ni & 1) * 2], bf[{}][ni >> 1][(ni & 1) * 2 + 1]);\n",
                   in, mma, buf, buf, buf);
  return s;
}

}  // namespace kiln::codegen
