// A wgmma gemm operand's tensor map, loads and descriptors (see gemm_tma_operand.h).
#include "codegen/gemm_tma_operand.h"

#include <fmt/format.h>

#include "ir/error.h"

namespace kiln::codegen {

namespace {

constexpr int kSwizzleBytes = 128;  // one swizzled row; 8 of them repeat the pattern
constexpr int kBoxMajor = 64;       // elements of M or N in one box of an MN-contiguous tile

}  // namespace

TmaOperand::TmaOperand(const ir::Kernel& k, bool operand_a, int rows, int bk)
    : k_(k), a_(operand_a), rows_(rows), bk_(bk), esize_(ir::gemm_tile_element_bytes(k)) {
  const ir::GemmLayout l = ir::gemm_layout(k, operand_a);
  k_contiguous_ = l.k_contiguous;
  ld_ = src_ld_ = l.ld;
  batch_strides_ = l.batch_strides;
  if (!ir::gemm_operand_tma(k, operand_a)) {
    if (!ir::gemm_operand_stageable(k, operand_a))
      throw Error(fmt::format("kernel @{}: operand {} can neither load through TMA nor be staged", k.name,
                              operand_a ? "A" : "B"));
    staged_ = true;
    ld_ = ir::gemm_staged_ld(k, operand_a);
  }
  if (bk_ * esize_ != kSwizzleBytes)
    throw Error(fmt::format("kernel @{}: a TMA operand's K step must be {} bytes", k.name, kSwizzleBytes));
}

TensorMapSpec TmaOperand::spec() const {
  TensorMapSpec s;
  s.arg = (a_ ? k_.gemm.a : k_.gemm.b).arg;
  // A staged operand's map describes its copy (the caller sets s.staged to its index).
  // fp8 operands load their stored bytes.
  s.dtype = ir::gemm_fp8_operand(k_, a_).value_or(k_.gemm.operand_dtype);
  const uint64_t outer = static_cast<uint64_t>(a_ ? k_.gemm.m : k_.gemm.n), depth = static_cast<uint64_t>(k_.gemm.k);
  s.dims[0] = k_contiguous_ ? depth : outer;
  s.dims[1] = k_contiguous_ ? outer : depth;
  s.strides[0] = static_cast<uint64_t>(ld_ * esize_);
  s.box[0] = static_cast<uint32_t>(kSwizzleBytes / esize_);
  s.box[1] = static_cast<uint32_t>(k_contiguous_ ? rows_ : bk_);
  int rank = 2;
  for (size_t d = 0; d < batch_strides_.size(); ++d) {
    if (batch_strides_[d] == 0) continue;  // broadcast: every batch entry reads the same matrix
    s.dims[rank] = static_cast<uint64_t>(k_.gemm.batch[d]);
    s.strides[rank - 1] = static_cast<uint64_t>(batch_strides_[d] * esize_);
    s.box[rank] = 1;
    ++rank;
  }
  s.rank = rank;
  return s;
}

StagedOperand TmaOperand::staging() const {
  StagedOperand s;
  s.arg = (a_ ? k_.gemm.a : k_.gemm.b).arg;
  s.dtype = k_.gemm.operand_dtype;
  const int64_t outer = a_ ? k_.gemm.m : k_.gemm.n;
  s.rows = static_cast<uint64_t>(k_contiguous_ ? outer : k_.gemm.k);
  s.cols = static_cast<uint64_t>(k_contiguous_ ? k_.gemm.k : outer);
  s.src_ld = static_cast<uint64_t>(src_ld_);
  s.dst_ld = static_cast<uint64_t>(ld_);
  return s;
}

std::string TmaOperand::describe() const {
  if (staged_)
    return fmt::format("{}: staged before the launch into rows of {} elements (its own rows of {} are not 16-byte "
                       "multiples), then {}",
                       a_ ? "A" : "B", ld_, src_ld_, describe_layout().substr(3));
  return describe_layout();
}

std::string TmaOperand::describe_layout() const {
  if (k_contiguous_)
    return fmt::format("{}: K contiguous, one {} x {} box a step (K-major)", a_ ? "A" : "B", rows_, bk_);
  return fmt::format("{}: {} contiguous, {} boxes of {} x {} a step ({}-major)", a_ ? "A" : "B", a_ ? "M" : "N",
                     rows_ / kBoxMajor, bk_, kBoxMajor, a_ ? "M" : "N");
}

// The coordinates of batch entry `batch` along the dims the map keeps: the output's
// batch index split over its batch dims (the last dim fastest).
std::vector<std::string> TmaOperand::batch_coordinates() const {
  std::vector<std::string> out;
  const Shape& dims = k_.gemm.batch;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (batch_strides_[d] == 0) continue;
    int64_t inner = 1;
    for (size_t e = d + 1; e < dims.size(); ++e) inner *= dims[e];
    out.push_back(fmt::format("(int)(batch / {}u % {}u)", inner, dims[d]));
  }
  return out;
}

std::string TmaOperand::issue(const std::string& in, const std::string& map, const std::string& dst,
                              const std::string& r0, const std::string& k0, const std::string& bar,
                              const std::string& multicast) const {
  const std::vector<std::string> batch = batch_coordinates();
  const int rank = 2 + static_cast<int>(batch.size());
  auto load = [&](const std::string& at, const std::string& c0, const std::string& c1) {
    std::vector<std::string> coords = {c0, c1};
    coords.insert(coords.end(), batch.begin(), batch.end());
    if (!multicast.empty())
      return fmt::format("{}kiln_tma_multicast_{}d({}, &{}, {}, {}, {});\n", in, rank, at, map, bar, multicast,
                         fmt::join(coords, ", "));
    return fmt::format("{}kiln_tma_load_{}d({}, &{}, {}, {});\n", in, rank, at, map, bar, fmt::join(coords, ", "));
  };
  if (k_contiguous_) return load(dst, k0, r0);
  std::string s;
  for (int box = 0; box < rows_ / kBoxMajor; ++box)
    s += load(fmt::format("{} + {}u", dst, box * bk_ * kSwizzleBytes), fmt::format("{} + {}", r0, box * kBoxMajor),
              k0);
  return s;
}

std::string TmaOperand::descriptor(const std::string& tile, int row, const std::string& kk) const {
  // K-major: rows of 128 bytes, 8-row groups 1024 bytes apart; a slice of K (16 deep,
  // 32 for fp8) starts 32 bytes further along the row (the swizzle is applied to the
  // address).
  if (k_contiguous_)
    return fmt::format("kiln_wgmma_desc({} + {}u + ({}) * 32u, 16u, 1024u)", tile, row * kSwizzleBytes, kk);
  // MN-major: boxes of 64 columns are `bk` rows of 128 bytes each (the leading offset
  // between them); 8 K rows make 1024 bytes (the stride offset); a slice is 16 K rows.
  return fmt::format("kiln_wgmma_desc({} + {}u + ({}) * {}u, {}u, 1024u)", tile, row / kBoxMajor * bk_ * kSwizzleBytes,
                     kk, 16 * kSwizzleBytes, bk_ * kSwizzleBytes);
}

}  // namespace kiln::codegen
