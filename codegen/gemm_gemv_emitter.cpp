// The gemv schedule of a gemm kernel (ir/tile_config_gemm_gemv.cpp): M <= 16 rows of
// activations x [M, K] against a weight w stored [N, K], the product decoding runs once a
// token, where reading the weight is the whole cost. Every lane streams 16-byte pieces of
// its weight rows, either straight into registers (the next step's in flight while it
// multiplies this one's) or, with `stages` S, through its own slots of a ring of S steps in
// shared memory (cp.async: S - 1 steps in flight, no registers held for them; no other
// lane reads a lane's slots, so no barrier), dequantises them in registers with bit
// tricks (i4 and i8 weights: w - z, exact), and feeds mma.sync m16n8k16. The scale
// multiplies each product's fp32 sum once a piece where that sum is one group of one
// weight row (a step's K inside one group; or, at M <= 2, B's columns split between the
// lane columns), else every weight pair before the product. With up to 8 rows the
// weight is the A fragment (16 weight rows a product, the activations as B's 8 columns;
// columns past M are zeros), so that each product consumes 256 weight elements; with 9
// to 16 rows the activations are A (rows past M are zeros) and each product takes 8
// weight rows.
//
// Fragment layout: lane (g, t) = (lane / 4, lane % 4) loads weight rows n0 + 8 s + g (its
// row slots s) and the activations of row g. Activations as A: slot s is B's column g of
// fragment s, and A's rows g and g + 8 are activation rows. Weights as A: slots 2 f and
// 2 f + 1 are A's rows g and g + 8 of fragment f, and B's column g is activation row g.
// Either way a lane holds four K positions of each product. Since a product sums over K,
// the K positions may be any fixed permutation of the lane's own elements, applied to A
// and B alike: a lane's 16-byte piece covers E consecutive elements of K (E = 8 f16, 16
// i8, 32 i4), and the pairs that the dequantising bit tricks produce (elements (0, 4),
// (1, 5), ... of an i4 word; (0, 2), (1, 3) of an i8 word) are the pairs of each
// product; the activations are permuted to match with byte permutes.
//
// After the K loop the warps' accumulators are summed in warp order through shared
// memory; with a split K, each slice's sums go to fp32 partials and the last slice of a
// column tile adds them in slice order (deterministic), then the epilogue runs.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "codegen/gemm_common.h"
#include "codegen/gemm_emitter.h"
#include "codegen/gemm_epilogue.h"
#include "codegen/kernel_params.h"
#include "codegen/scalar_emit.h"
#include "ir/error.h"
#include "ir/tile_config.h"

namespace kiln::codegen {

namespace {

// The four 32-bit words of a 16-byte piece, as a uint4 names them.
constexpr const char* kLanes[] = {"x", "y", "z", "w"};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Packed-pair arithmetic on 32-bit words holding two f16 or two bf16 values.
constexpr DeviceHelper kGemvHelpers[] = {
    // A 16-byte load that is read once: it skips L1 so that the activations stay there.
    {"kiln_load_stream16",
     "static __device__ __forceinline__ uint4 kiln_load_stream16(const void* p) {\n"
     "  uint4 r;\n"
     "  asm volatile(\"ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\"\n"
     "               : \"=r\"(r.x), \"=r\"(r.y), \"=r\"(r.z), \"=r\"(r.w) : \"l\"(p));\n"
     "  return r;\n}\n"},
    // The same, asking L2 for the 256 bytes around it, the next pieces of the row (2.5%
    // faster for packed weights as A at 8192 x 8192 on an H100, bench/NOTES.md).
    {"kiln_load_stream16_l2",
     "static __device__ __forceinline__ uint4 kiln_load_stream16_l2(const void* p) {\n"
     "  uint4 r;\n"
     "  asm volatile(\"ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\"\n"
     "               : \"=r\"(r.x), \"=r\"(r.y), \"=r\"(r.z), \"=r\"(r.w) : \"l\"(p));\n"
     "  return r;\n}\n"},
    {"kiln_sub2_f16",
     "static __device__ __forceinline__ unsigned kiln_sub2_f16(unsigned a, unsigned b) {\n"
     "  const __half2 r = __hsub2(*reinterpret_cast<const __half2*>(&a), *reinterpret_cast<const __half2*>(&b));\n"
     "  return *reinterpret_cast<const unsigned*>(&r);\n}\n"},
    {"kiln_mul2_f16",
     "static __device__ __forceinline__ unsigned kiln_mul2_f16(unsigned a, unsigned b) {\n"
     "  const __half2 r = __hmul2(*reinterpret_cast<const __half2*>(&a), *reinterpret_cast<const __half2*>(&b));\n"
     "  return *reinterpret_cast<const unsigned*>(&r);\n}\n"},
    {"kiln_sub2_bf16",
     "static __device__ __forceinline__ unsigned kiln_sub2_bf16(unsigned a, unsigned b) {\n"
     "  const __nv_bfloat162 r = __hsub2(*reinterpret_cast<const __nv_bfloat162*>(&a),\n"
     "                                   *reinterpret_cast<const __nv_bfloat162*>(&b));\n"
     "  return *reinterpret_cast<const unsigned*>(&r);\n}\n"},
    {"kiln_mul2_bf16",
     "static __device__ __forceinline__ unsigned kiln_mul2_bf16(unsigned a, unsigned b) {\n"
     "  const __nv_bfloat162 r = __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&a),\n"
     "                                   *reinterpret_cast<const __nv_bfloat162*>(&b));\n"
     "  return *reinterpret_cast<const unsigned*>(&r);\n}\n"},
    // (a & mask) ^ bits as one lop3 (SASS takes one immediate; the other constant stays in a
    // register): the nibbles under the mask, flipped into offset binary by the bits under
    // it, inside the magic number that the bits hold elsewhere.
    {"kiln_and_xor",
     "static __device__ __forceinline__ unsigned kiln_and_xor(unsigned a, unsigned mask, unsigned bits) {\n"
     "  unsigned d;\n"
     "  asm(\"lop3.b32 %0, %1, %2, %3, 0x6a;\" : \"=r\"(d) : \"r\"(a), \"r\"(mask), \"r\"(bits));\n"
     "  return d;\n}\n"},
    {"kiln_fma2_f16",
     "static __device__ __forceinline__ unsigned kiln_fma2_f16(unsigned a, unsigned b, unsigned c) {\n"
     "  const __half2 r = __hfma2(*reinterpret_cast<const __half2*>(&a), *reinterpret_cast<const __half2*>(&b),\n"
     "                            *reinterpret_cast<const __half2*>(&c));\n"
     "  return *reinterpret_cast<const unsigned*>(&r);\n}\n"},
    // An fp32 value as a pair of equal f16 values.
    {"kiln_pair_f16",
     "static __device__ __forceinline__ unsigned kiln_pair_f16(float v) {\n"
     "  const __half2 h = __float2half2_rn(v);\n"
     "  return *reinterpret_cast<const unsigned*>(&h);\n}\n"},
    // Two fp32 values as a bf16 pair, each rounded to nearest even.
    {"kiln_bf16_pair",
     "static __device__ __forceinline__ unsigned kiln_bf16_pair(float lo, float hi) {\n"
     "  const __nv_bfloat162 r = __floats2bfloat162_rn(lo, hi);\n"
     "  return *reinterpret_cast<const unsigned*>(&r);\n}\n"},
};

class GemvEmitter {
public:
  explicit GemvEmitter(const ir::Kernel& k)
      : k_(k), c_(k.config), g_(k.gemm), params_(param_names(k)), epilogue_(k, params_, 8) {
    w_ = k.args.at(static_cast<size_t>(g_.b.arg)).type.dtype;
    bf16_ = g_.operand_dtype == DType::bf16;
    lane_elems_ = ir::gemv_lane_elems(k);
    tiles_ = c_.bn / 8;
    unroll_ = c_.bk / (4 * lane_elems_);
    pieces_ = lane_elems_ / 8;  // 16-byte pieces of activations per row and weight piece
    two_rows_ = g_.m > 8;
    weights_a_ = ir::gemv_weights_as_a(k, c_);
    accs_ = weights_a_ ? tiles_ / 2 : tiles_;
    if (dequant()) {
      // A step's 4 lane columns span 4 * lane_elems_ of K at each unroll index.
      const int64_t group = g_.b.dequant.group;
      const bool one_group_a_step = group % (4 * lane_elems_) == 0 || group == g_.k;
      split_columns_ = !one_group_a_step && weights_a_ && g_.m <= 2;
      scales_after_ = one_group_a_step || split_columns_;
      // The offset (and zero point) of the i4 bit trick leaves the pairs and joins the
      // products' sums, where the f16 pairs of one activation row have their own fma.
      // Both only with the weights as A (M <= 8): with two activation rows the products
      // bound the loop, and the activations' sums (or a second plane) add to them (20.6
      // against 19.8 us at M = 16 on an H100, bench/NOTES.md).
      nibble_planes_ = scales_after_ && weights_a_ && bf16_ && w_ == DType::i8;
      fold_offset_ = scales_after_ && weights_a_ && ((w_ == DType::i4 && bf16_) || nibble_planes_);
    }
    split_ = c_.split_k > 1;
    slice_ = ir::gemm_k_slice(k, c_);
    col_tiles_ = ceil_div(g_.n, c_.bn);
    padded_n_ = col_tiles_ * c_.bn;
  }

  std::string emit() const {
    std::string s = header();
    if (split_) s += scratch();
    s += epilogue_.functions();
    s += signature();
    s += setup();
    s += main_loop();
    s += warp_sums();
    return s + "}\n";
  }

private:
  const std::string& param(int arg) const { return params_.at(static_cast<size_t>(arg)); }
  std::string scratch_name(const char* what) const { return fmt::format("kiln_{}_{}", k_.name, what); }
  bool dequant() const { return g_.b.dequant.active(); }
  // The fp32 path of bf16 products from i8 weights (their bytes do not fit the bf16 trick).
  bool float_path() const { return bf16_ && w_ == DType::i8 && !nibble_planes_; }
  const char* pair() const { return bf16_ ? "bf16" : "f16"; }
  // A packed pair of ones in the products' type.
  const char* ones() const { return bf16_ ? "0x3f803f80u" : "0x3c003c00u"; }

  std::string header() const {
    const LaunchDims d = gemm_launch_dims(k_);
    std::string s = gemm_header_title(k_);
    s += fmt::format("// Config {}:\n//   grid {} x {} blocks of {} threads, {} bytes of shared memory (the warps' sums{})\n",
                     c_.str(), d.grid[0], d.grid[1], d.block[0], d.shared_bytes, c_.stages > 0 ? ", the ring" : "");
    s += fmt::format("//   schedule gemv: a block owns {} columns ({} weight rows a lane group), its {} warps split K "
                     "in steps of {}; each lane loads {} 16-byte piece{} of each of its {} weight row{} a step\n",
                     c_.bn, tiles_, c_.warps_n, c_.bk, unroll_, unroll_ == 1 ? "" : "s", tiles_, tiles_ == 1 ? "" : "s");
    s += weights_a_ ? "//   the weight is mma's A operand (16 weight rows a product), the activations its B\n"
                    : "//   the activations are mma's A operand, the weight its B (8 weight rows a product)\n";
    if (dequant()) {
      const ir::GemmDequant& dq = g_.b.dequant;
      s += fmt::format("//   B %{}: {} weights [N, K], dequantised in registers: (w - z) * s with scales %{}{} per {} "
                       "elements of K{}\n",
                       k_.args[static_cast<size_t>(g_.b.arg)].name, dtype_name(w_), k_.args[static_cast<size_t>(dq.scale)].name,
                       dq.zero >= 0 ? fmt::format(" and zero points %{}", k_.args[static_cast<size_t>(dq.zero)].name) : "",
                       dq.group, float_path() ? " (fp32 math, rounded to bf16)" : " (packed-pair math)");
      if (interleaved())
        s += "//   stored interleaved, [N / 8, K / E, 8, E]: the 16-byte pieces of 8 rows side by side, so that a warp's "
             "load of 8 rows covers 512 consecutive bytes\n";
      if (split_columns_)
        s += "//   B's column 2 c + m holds activation row m at lane column c's K positions alone: each fp32 sum of a "
             "product is one group of one weight row, scaled once a piece\n";
      else if (scales_after_)
        s += "//   a step's K lies in one group: each fp32 sum of a product is scaled once a piece\n";
      if (fold_offset_)
        s += "//   the pairs keep the bit trick's offset (w - z + offset, exact): each sum takes (offset + z) times its "
             "activations' sum, which products against ones give\n";
    }
    if (c_.stages > 0)
      s += fmt::format("//   the weight pieces stream through a ring of {} steps in shared memory (cp.async), {} steps "
                       "ahead of the products\n",
                       c_.stages, c_.stages - 1);
    if (split_)
      s += fmt::format("//   K in {} slices of {}; each column tile's last slice sums the fp32 partials in slice order\n",
                       c_.split_k, slice_);
    s += "//   epilogue: " + epilogue_.describe() + "\n";
    return s;
  }

  std::string scratch() const {
    return fmt::format("__device__ float {}[{}];\n__device__ int {}[{}];\n", scratch_name("partials"),
                       int64_t{c_.split_k} * g_.m * padded_n_, scratch_name("tickets"), col_tiles_);
  }

  std::string signature() const {
    // 512 threads an SM at least (128 registers a thread at most): enough loads in flight
    // to stream the weight, and ptxas does not trade registers for spills.
    const int threads = 32 * c_.warps_n;
    return fmt::format("extern \"C\" __global__ void __launch_bounds__({}, {}) {}({}) {{\n", threads,
                       std::max(1, 512 / threads), k_.name,
                       fmt::join(gemm_pointer_params(k_, params_), ", "));
  }

  std::string setup() const {
    std::string s = "  extern __shared__ __align__(16) unsigned char kiln_smem[];\n";
    s += "  const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5;\n";
    s += "  const int g = lane >> 2, t = lane & 3;  // this lane's fragment row / column and K positions\n";
    s += fmt::format("  const int n0 = (int)blockIdx.x * {};\n", c_.bn);
    s += "  [[maybe_unused]] const unsigned batch = 0;\n";
    const std::string kt = k_type();
    if (split_) {
      s += fmt::format("  const {} k_begin = ({})blockIdx.y * {};\n", kt, kt, slice_);
      s += fmt::format("  const {} k_end = min(({}){}, k_begin + {});\n", kt, kt, g_.k, slice_);
    } else {
      s += fmt::format("  const {} k_begin = 0, k_end = {};\n", kt, g_.k);
    }
    const char* groups = dequant() ? ", and the index of its first group" : "";
    if (whole_tiles()) {
      s += fmt::format("  // The lane's first weight row as a byte pointer{}; row slot j is 8 j rows on, a\n", groups);
      s += "  // constant offset that the loads take as their immediate.\n";
      if (interleaved())
        s += fmt::format("  const unsigned char* const w_base = reinterpret_cast<const unsigned char*>({}) + (long long)n0 * "
                         "{}ll + g * 16;  // 8 rows' pieces side by side\n",
                         param(g_.b.arg), row_bytes());
      else
        s += fmt::format("  const unsigned char* const w_base = reinterpret_cast<const unsigned char*>({}) + (long long)(n0 + g) * "
                         "{}ll;\n",
                         param(g_.b.arg), row_bytes());
      if (dequant()) s += fmt::format("  const long long g_row = (long long)(n0 + g) * {}ll;\n", g_.k / g_.b.dequant.group);
    }
    if (!whole_tiles()) {
      s += fmt::format("  // The lane's weight rows (clamped to the last: the columns past N are computed and dropped),\n"
                       "  // as byte pointers to their first element{}.\n", groups);
    }
    for (int j = 0; j < tiles_ && !whole_tiles(); ++j) {
      s += fmt::format("  const long long w_row{} = (long long)min(n0 + {} + g, {});\n", j, 8 * j, g_.n - 1);
      if (interleaved())
        s += fmt::format("  const unsigned char* const w_base{} = reinterpret_cast<const unsigned char*>({}) + (w_row{} >> 3) * "
                         "{}ll + (w_row{} & 7) * 16;\n",
                         j, param(g_.b.arg), j, 8 * row_bytes(), j);
      else
        s += fmt::format("  const unsigned char* const w_base{} = reinterpret_cast<const unsigned char*>({}) + w_row{} * {}ll;\n",
                         j, param(g_.b.arg), j, row_bytes());
      if (dequant())
        s += fmt::format("  const long long g_row{} = w_row{} * {}ll;\n", j, j, g_.k / g_.b.dequant.group);
    }
    if (split_columns_) {
      s += "  // B's column g is activation row g % 2 at lane column g / 2's K positions: this lane's own\n";
      s += "  // positions when g / 2 == t, zeros elsewhere and for rows past M.\n";
      s += fmt::format("  [[maybe_unused]] const bool x_in0 = (g >> 1) == t && (g & 1) < {};\n", g_.m);
      s += fmt::format("  const {}* x_row0 = {} + (long long)min(g & 1, {}) * {}ll;\n", storage_type(g_.operand_dtype),
                       param(g_.a.arg), g_.m - 1, g_.k);
    } else {
      s += "  // The lane's activation rows g and g + 8; rows past M read as zeros.\n";
      s += fmt::format("  [[maybe_unused]] const bool x_in0 = g < {};\n", g_.m);
      s += fmt::format("  const {}* x_row0 = {} + (long long)min(g, {}) * {}ll;\n", storage_type(g_.operand_dtype),
                       param(g_.a.arg), g_.m - 1, g_.k);
    }
    if (two_rows_) {
      s += fmt::format("  [[maybe_unused]] const bool x_in1 = g + 8 < {};\n", g_.m);
      s += fmt::format("  const {}* x_row1 = {} + (long long)min(g + 8, {}) * {}ll;\n", storage_type(g_.operand_dtype),
                       param(g_.a.arg), g_.m - 1, g_.k);
    }
    s += fmt::format("  float acc[{}][4] = {{}};\n", accs_);
    return s;
  }

  // The type of K positions: 32 bits where K (and the steps loaded past it) allows.
  std::string k_type() const {
    // Interleaved weights shift K positions left by up to 3 to make byte offsets.
    const int64_t reach = (g_.k + int64_t{c_.bk} * c_.warps_n * (c_.stages + 1)) * (interleaved() ? 8 : 1);
    return reach < (int64_t{1} << 31) ? "int" : "long long";
  }

  // Packed (dequantised) weights as mma's A operand (M <= 8): the path whose loads clear
  // no registers and ask L2 for the row's next pieces.
  bool packed_as_a() const { return dequant() && weights_a_; }

  // Every K slice a whole number of steps: no step of the loop crosses the end of K.
  bool whole_steps() const { return slice_ % c_.bk == 0 && g_.k % c_.bk == 0; }

  // The bytes of one weight row.
  int64_t row_bytes() const { return w_ == DType::i4 ? g_.k / 2 : w_ == DType::i8 ? g_.k : 2 * g_.k; }

  // N a multiple of the column tile (no row is clamped): one base pointer and constant
  // offsets. Not with two activation rows (M > 8), which measured slower that way (19.0
  // against 18.0 us at 16 x 8192 x 8192 on an H100).
  bool whole_tiles() const { return g_.n % c_.bn == 0 && !two_rows_; }

  // Weights in the interleaved layout (ir::GemmDequant::interleave): 8 rows' 16-byte
  // pieces side by side, so that a piece of K (E elements) starts 128 bytes past the last.
  bool interleaved() const { return g_.b.dequant.interleave != 0; }

  // The byte address of element `k` (code, never negative; a piece's first where the
  // weights are interleaved) of row slot j's weight row. Interleaved, row slot j's 8 rows
  // are still 8 j rows' bytes on: each 8 rows take as many bytes as stored [N, K].
  std::string weight_at(int j, const std::string& k) const {
    const char* bytes = w_ == DType::i4 ? " >> 1" : w_ == DType::i8 ? "" : " * 2";
    if (interleaved()) bytes = w_ == DType::i4 ? " << 2" : " << 3";  // 128 bytes per piece of 32 (i4) or 16 (i8)
    if (!whole_tiles()) return fmt::format("w_base{} + (({}){}{})", j, k_type(), k, bytes);
    return fmt::format("w_base + (({}){}{}) + {}ll", k_type(), k, bytes, 8 * j * row_bytes());
  }

  // The index of the group of element `k` (code, never negative) of row slot j's weight
  // row, in the [N, K / group] scales and zero points.
  std::string group_at(int j, const std::string& k) const {
    const std::string unsigned_k = k_type() == "int" ? "(unsigned)" : "(unsigned long long)";
    if (!whole_tiles()) return fmt::format("g_row{} + {}({}) / {}u", j, unsigned_k, k, g_.b.dequant.group);
    return fmt::format("g_row + {}ll + {}({}) / {}u", 8 * j * (g_.k / g_.b.dequant.group), unsigned_k, k,
                       g_.b.dequant.group);
  }

  // The arrays a step holds: the weight pieces and their scales and zero points (named with
  // `sfx`: "" for the step being multiplied, "_next" for the one being loaded), or the
  // activation pieces.
  std::string stream_arrays(const std::string& in, const std::string& sfx, bool weights = true) const {
    std::string s = weights ? fmt::format("{}uint4 w_piece{}[{}][{}];\n", in, sfx, unroll_, tiles_) : "";
    if (dequant())
      s += fmt::format("{}unsigned scale2{}[{}][{}], zero2{}[{}][{}]{};\n", in, sfx, unroll_, tiles_, sfx, unroll_,
                       tiles_, float_zero() ? fmt::format(", zero2_float{}[{}][{}]", sfx, unroll_, tiles_) : "");
    return s;
  }

  // The lane's piece of K at unroll index u of the step at `kc`, and whether it is in K.
  std::string piece_position(const std::string& b, const std::string& kc) const {
    return fmt::format("{}const {} k = {} + u * {} + t * {};  // the lane's piece of K\n{}[[maybe_unused]] "
                       "const bool in = k < k_end;\n",
                       b, k_type(), kc, 4 * lane_elems_, lane_elems_, b);
  }

  // The weight pieces of the step at `kc` (zeros past K) with their scales and zero points:
  // the loads that reach DRAM. Without `weights`, the scales and zero points alone.
  std::string stream_loads(const std::string& in, const std::string& kc, const std::string& sfx,
                           bool weights = true) const {
    if (!weights && !dequant()) return "";
    std::string s = fmt::format("{}#pragma unroll\n{}for (int u = 0; u < {}; ++u) {{\n", in, in, unroll_);
    const std::string b = in + "  ";
    s += piece_position(b, kc);
    // Packed weights as A past K load a piece inside it instead of zeros (no registers to
    // clear): their activations are zeros, and a dequantised piece is finite, so the
    // products are zeros. Floating-point weights keep the zeros (a piece elsewhere in K may
    // hold an inf), and so do the weights as B, where neither gained (M = 16 ran 2% slower
    // with both on an H100, bench/NOTES.md).
    const bool clamped = weights && packed_as_a();
    if (clamped)
      s += fmt::format("{}const {} k_in = min(k, k_end - {});  // a piece inside K\n", b, k_type(), lane_elems_);
    for (int j = 0; weights && j < tiles_; ++j)
      s += clamped ? fmt::format("{}w_piece{}[u][{}] = kiln_load_stream16_l2({});\n", b, sfx, j, weight_at(j, "k_in"))
                   : fmt::format("{}w_piece{}[u][{}] = in ? kiln_load_stream16({}) : make_uint4(0u, 0u, 0u, 0u);\n", b,
                                 sfx, j, weight_at(j, "k"));
    if (dequant()) s += scale_loads(b, sfx);
    return s + in + "}\n";
  }

  // The ring: one slot of a step is unroll x tiles pieces of every thread, piece-major, so
  // that a warp's 16-byte accesses to one piece cover 512 consecutive bytes.
  int64_t piece_bytes() const { return int64_t{32} * c_.warps_n * 16; }  // one piece of every thread
  int64_t slot_bytes() const { return int64_t{unroll_} * tiles_ * piece_bytes(); }

  // Copies of the weight pieces of the step at `kc` into ring slot `slot` (zeros past K),
  // closed as one group.
  std::string ring_copies(const std::string& in, const std::string& kc, const std::string& slot) const {
    std::string s = fmt::format("{}#pragma unroll\n{}for (int u = 0; u < {}; ++u) {{\n", in, in, unroll_);
    const std::string b = in + "  ";
    s += piece_position(b, kc);
    for (int j = 0; j < tiles_; ++j)
      s += fmt::format("{}kiln_copy_async16_zfill(ring + {} * {}u + (u * {} + {}) * {}u, in ? (const void*)({}) : "
                       "(const void*){}, in ? 16u : 0u);\n",
                       b, slot, slot_bytes(), tiles_, j, piece_bytes(), weight_at(j, "k"),
                       param(g_.b.arg));
    return s + in + "}\n" + in + "kiln_copy_async_commit();\n";
  }

  // This step's weight pieces, from this thread's part of ring slot `slot`.
  std::string ring_reads(const std::string& in, const std::string& slot) const {
    std::string s = fmt::format("{}uint4 w_piece[{}][{}];\n", in, unroll_, tiles_);
    s += fmt::format("{}#pragma unroll\n{}for (int u = 0; u < {}; ++u)\n{}#pragma unroll\n{}  for (int j = 0; j < {}; "
                     "++j)\n",
                     in, in, unroll_, in, in, tiles_);
    s += fmt::format("{}    w_piece[u][j] = *reinterpret_cast<const uint4*>(my_slots + {} * {}u + (u * {} + j) * {}u);\n",
                     in, slot, slot_bytes(), tiles_, piece_bytes());
    return s;
  }

  // The activation pieces of the step at kc: a few KB that every block reads, so L1 hits.
  std::string activation_loads(const std::string& in) const {
    std::string s = fmt::format("{}uint4 x_piece0[{}][{}]{};\n", in, unroll_, pieces_,
                                two_rows_ ? fmt::format(", x_piece1[{}][{}]", unroll_, pieces_) : "");
    s += fmt::format("{}#pragma unroll\n{}for (int u = 0; u < {}; ++u) {{\n", in, in, unroll_);
    const std::string b = in + "  ";
    s += piece_position(b, "kc");
    s += fmt::format("{}#pragma unroll\n{}for (int p = 0; p < {}; ++p) {{\n", b, b, pieces_);
    // Rows past M may hold any finite values: their columns of the result are dropped. So
    // with packed weights as A, where no step crosses the end of K, they load unconditionally.
    const bool guarded = !packed_as_a() || split_columns_ || !whole_steps();
    auto load = [&](int row) {
      const std::string x = fmt::format("__ldg(reinterpret_cast<const uint4*>(x_row{} + k + 8 * p))", row);
      if (!guarded) return x;
      return fmt::format("in && x_in{} ? {} : make_uint4(0u, 0u, 0u, 0u)", row, x);
    };
    s += fmt::format("{}  x_piece0[u][p] = {};\n", b, load(0));
    if (two_rows_) s += fmt::format("{}  x_piece1[u][p] = {};\n", b, load(1));
    s += b + "}\n";
    return s + in + "}\n";
  }

  // This step's arrays taken over from the ones loaded during the last step.
  std::string take_next(const std::string& in, bool weights = true) const {
    if (!weights && !dequant()) return "";
    std::string s = stream_arrays(in, "", weights);
    s += fmt::format("{}#pragma unroll\n{}for (int u = 0; u < {}; ++u)\n{}#pragma unroll\n{}  for (int j = 0; j < {}; "
                     "++j) {{\n",
                     in, in, unroll_, in, in, tiles_);
    if (weights) s += in + "    w_piece[u][j] = w_piece_next[u][j];\n";
    if (dequant()) s += in + "    scale2[u][j] = scale2_next[u][j]; zero2[u][j] = zero2_next[u][j];\n";
    if (float_zero()) s += in + "    zero2_float[u][j] = zero2_float_next[u][j];\n";
    return s + in + "  }\n";
  }

  // Each piece's scale (and zero point) as a pair of equal values: as a packed pair, or as
  // fp32 bits on the fp32 path and where the scale multiplies the products' sums. A zero
  // point of the weights' integer type is folded into the constant that the bit trick
  // subtracts.
  std::string scale_loads(const std::string& b, const std::string& sfx) const {
    const ir::GemmDequant& dq = g_.b.dequant;
    const ir::KernelArg& sc = k_.args.at(static_cast<size_t>(dq.scale));
    std::string s;
    for (int j = 0; j < tiles_; ++j) {
      const std::string at = group_at(j, "k");
      if (scales_after_ && !split_columns_) {
        // The scale of the whole step's K at u, which the products' sums take, whether or
        // not this lane's own piece lies in K.
        const std::string first = fmt::format("(k - t * {})", lane_elems_);
        s += fmt::format("{}scale2{}[u][{}] = __float_as_uint({} < k_end ? {} : 0.0f);\n", b, sfx, j, first,
                         load_expr(sc.type.dtype, fmt::format("{}[{}]", param(dq.scale),
                                                              group_at(j, first))));
      } else if (float_path() || scales_after_) {  // fp32 bits
        s += fmt::format("{}scale2{}[u][{}] = __float_as_uint(in ? {} : 0.0f);\n", b, sfx, j,
                         load_expr(sc.type.dtype, fmt::format("{}[{}]", param(dq.scale), at)));
      } else {
        s += fmt::format("{}{{ const unsigned bits = in ? (unsigned)reinterpret_cast<const unsigned short*>({})[{}] : 0u; "
                         "scale2{}[u][{}] = bits | bits << 16; }}\n",
                         b, param(dq.scale), at, sfx, j);
      }
      if (fold_offset_ && !split_columns_) {
        // The whole step's zero point, as its scale: the sum it meets spans every lane column.
        const std::string first = fmt::format("(k - t * {})", lane_elems_);
        s += fmt::format("{}zero2{}[u][{}] = {};\n", b, sfx, j, zero_code(group_at(j, first), first + " < k_end"));
      } else {
        s += fmt::format("{}zero2{}[u][{}] = {};\n", b, sfx, j, zero_code(at));
      }
      if (float_zero())  // subtracted as its own packed pair after the offset
        s += fmt::format("{}{{ const unsigned bits = in ? (unsigned)reinterpret_cast<const unsigned short*>({})[{}] : 0u; "
                         "zero2_float{}[u][{}] = bits | bits << 16; }}\n",
                         b, param(dq.zero), at, sfx, j);
    }
    return s;
  }

  // The bias that turns the bit trick's biased pair into (w - z): the trick's own offset,
  // plus an integer zero point; on the fp32 path the zero point itself (fp32 bits); folded,
  // offset + z in fp32 bits, which the products' sums take (`in`: whether z is read).
  std::string zero_code(const std::string& at, const std::string& in = "in") const {
    const ir::GemmDequant& dq = g_.b.dequant;
    const double offset = w_ == DType::i4 ? (bf16_ ? 136 : 1032) : nibble_planes_ ? 2304 : 1152;
    std::string z = "0.0f";  // past K no zero point is read
    if (dq.zero >= 0) {
      const ir::KernelArg& za = k_.args.at(static_cast<size_t>(dq.zero));
      if (za.type.dtype == DType::i4)
        z = fmt::format("({} ? (float)kiln_load_i4({}, {}) : 0.0f)", in, param(dq.zero), at);
      else if (za.type.dtype == DType::i8)
        z = fmt::format("({} ? (float){}[{}] : 0.0f)", in, param(dq.zero), at);
      else
        z = fmt::format("({} ? {} : 0.0f)", in, load_expr(za.type.dtype, fmt::format("{}[{}]", param(dq.zero), at)));
    }
    if (fold_offset_) return fmt::format("__float_as_uint({:.1f}f{})", offset, dq.zero >= 0 ? " + " + z : "");
    // The fp32 path's offset is 2^23 + 128 (the byte's place in 2^23's mantissa).
    if (float_path()) return fmt::format("__float_as_uint({})", integer_zero() ? "8388736.0f + " + z : z);
    // The offset alone, as a literal pair: 136 in bf16, 1032 or 1152 in f16.
    if (dq.zero < 0 || !integer_zero())
      return w_ == DType::i4 ? (bf16_ ? "0x43084308u" : "0x64086408u") : "0x64806480u";
    // An integer zero point joins the offset exactly; a float one is subtracted after it.
    const std::string total = fmt::format("{:.1f}f + {}", offset, z);
    return bf16_ ? fmt::format("kiln_bf16_pair({}, {})", total, total) : fmt::format("kiln_pair_f16({})", total);
  }

  // No zero point, or one of the weights' integer type: exact beside the offset.
  bool integer_zero() const {
    const ir::GemmDequant& dq = g_.b.dequant;
    return dq.zero < 0 || is_storage_only(k_.args.at(static_cast<size_t>(dq.zero)).type.dtype);
  }

  // The float zero point of a piece, subtracted after the offset (packed-pair math).
  bool float_zero() const {
    const ir::GemmDequant& dq = g_.b.dequant;
    return dq.zero >= 0 && !is_storage_only(k_.args.at(static_cast<size_t>(dq.zero)).type.dtype) && !float_path() &&
           !fold_offset_;
  }

  // The weight pair for element pair `biased` (code: a packed pair of offset values) of row
  // slot `j`, dequantised. With `zero16` (f16 only), the pair's nibbles sit 4 bits up in
  // the mantissa, and one fma scales them down by 16 exactly and adds `zero16` (minus the
  // offset of the scaled-down pair). Where the scale multiplies the products' sums, the
  // pair is w - z alone, exact.
  std::string finish_pair(const std::string& biased, const std::string& j, const std::string& zero16 = "") const {
    if (fold_offset_) return biased;
    std::string v = !zero16.empty() ? fmt::format("kiln_fma2_f16({}, 0x2c002c00u, {})", biased, zero16)
                                    : fmt::format("kiln_sub2_{}({}, zero2[u][{}])", pair(), biased, j);
    if (float_zero()) v = fmt::format("kiln_sub2_{}({}, zero2_float[u][{}])", pair(), v, j);
    if (scales_after_) return v;
    return fmt::format("kiln_mul2_{}({}, scale2[u][{}])", pair(), v, j);
  }

  // The dequantised weight pairs of word q of row slot `j`'s piece at unroll index u, named
  // `name`0, `name`1, ...: pair i holds the two elements of the word that one K position
  // pair of a product takes (four pairs from an i4 word, two from an i8 one).
  std::string weight_pairs(const std::string& in, const std::string& j, int q, const std::string& name) const {
    const std::string word = fmt::format("w_piece[u][{}].{}", j, kLanes[q]);
    std::string s;
    if (w_ == DType::i4) {
      // Word q holds elements 8q .. 8q + 7; its nibbles i and i + 4 form one biased pair:
      // w + 8 (the sign bit flipped: offset binary) in the mantissa of the magic number.
      const unsigned magic = bf16_ ? 0x43004300u : 0x64006400u;
      // bf16's 7 mantissa bits take a nibble only at the bottom: one shift a pair. So do
      // f16 pairs with two activation rows (M > 8), whose registers have no room for the
      // second constant below.
      if (bf16_ || !weights_a_) {
        for (int i = 0; i < 4; ++i)
          s += fmt::format("{}const unsigned {}{} = {};\n", in, name, i,
                           finish_pair(fmt::format("kiln_and_xor({}{}, 0x000f000fu, 0x{:08x}u)", word,
                                                   i == 0 ? "" : fmt::format(" >> {}", 4 * i), magic | 0x00080008u),
                                       j));
        return s;
      }
      // f16: nibbles (0, 4), and (2, 6) after one shift, at the bottom of the mantissa;
      // (1, 5) and (3, 7) 4 bits up, worth 1024 + 16 (w + 8), scaled down by their fma,
      // which adds 960 - (1032 + z) = -(72 + z) (exact integers).
      s += fmt::format("{}const unsigned {}_high = {} >> 8;\n", in, name, word);
      s += fmt::format("{}const unsigned {}_zero16 = kiln_sub2_f16(0x63806380u, zero2[u][{}]);\n", in, name, j);
      for (int i = 0; i < 4; ++i)
        s += fmt::format("{}const unsigned {}{} = {};\n", in, name, i,
                         finish_pair(fmt::format("kiln_and_xor({}, 0x{:08x}u, 0x{:08x}u)", i < 2 ? word : name + "_high",
                                                 i % 2 == 0 ? 0x000f000fu : 0x00f000f0u,
                                                 magic | (i % 2 == 0 ? 0x00080008u : 0x00800080u)),
                                     j, i % 2 == 1 ? name + "_zero16" : ""));
    } else if (nibble_planes_) {
      // i8 into bf16 as nibble planes: pairs 0 and 1 are the low nibbles of bytes (0, 2) and
      // (1, 3) as 128 + l, pairs 2 and 3 their high nibbles, sign flipped, as 2048 + 16 (h + 8).
      s += fmt::format("{}const unsigned {}0 = kiln_and_xor({}, 0x000f000fu, 0x43004300u);\n", in, name, word);
      s += fmt::format("{}const unsigned {}1 = kiln_and_xor({} >> 8, 0x000f000fu, 0x43004300u);\n", in, name, word);
      s += fmt::format("{}const unsigned {}2 = kiln_and_xor({} >> 4, 0x000f000fu, 0x45084508u);\n", in, name, word);
      s += fmt::format("{}const unsigned {}3 = kiln_and_xor({} >> 12, 0x000f000fu, 0x45084508u);\n", in, name, word);
    } else if (float_path()) {
      // i8 into bf16 through fp32: bytes (0, 2) and (1, 3) form the pairs. Byte b, offset
      // binary, becomes the low byte of 2^23's mantissa (2^23 + 128 + w, exact), and one
      // add takes 2^23 + 128 + z off (z an integer: folded into zero2), or two with a float z.
      s += fmt::format("{}const unsigned {}_word = {} ^ 0x80808080u;  // offset binary: w + 128\n", in, name, word);
      s += fmt::format("{}float {}_e[4];\n", in, name);
      const std::string biased = fmt::format("__uint_as_float(__byte_perm({}_word, 0x4b000000u, 0x7650 + b))", name);
      const std::string zero = fmt::format("__uint_as_float(zero2[u][{}])", j);
      std::string e = integer_zero() ? fmt::format("({} - {})", biased, zero)
                                     : fmt::format("(({} - 8388736.0f) - {})", biased, zero);
      if (!scales_after_) e = fmt::format("{} * __uint_as_float(scale2[u][{}])", e, j);
      s += fmt::format("{}#pragma unroll\n{}for (int b = 0; b < 4; ++b) {}_e[b] = {};\n", in, in, name, e);
      s += fmt::format("{}const unsigned {}0 = kiln_bf16_pair({}_e[0], {}_e[2]), {}1 = kiln_bf16_pair({}_e[1], {}_e[3]);\n",
                       in, name, name, name, name, name, name);
    } else {
      // i8: word q holds elements 4q .. 4q + 3; bytes (0, 2) and (1, 3) form the pairs.
      s += fmt::format("{}const unsigned {}_word = {} ^ 0x80808080u;  // offset binary: w + 128\n", in, name, word);
      s += fmt::format("{}const unsigned {}0 = {};\n", in, name,
                       finish_pair(fmt::format("__byte_perm({}_word, 0x64646464u, 0x4240)", name), j));
      s += fmt::format("{}const unsigned {}1 = {};\n", in, name,
                       finish_pair(fmt::format("__byte_perm({}_word, 0x64646464u, 0x4341)", name), j));
    }
    return s;
  }

  // The activation words that meet weight pair `pair` of word q in a product: activation
  // row `row`'s two elements at the K positions of that pair (K positions lo, hi).
  std::string activation_pair(int row, int q, int pair, bool high) const {
    if (row == 1 && !two_rows_) return "0u";
    if (!dequant())  // f16 / bf16: weight word w is elements 2w, 2w + 1, as activation word w
      return fmt::format("x_piece{}[u][0].{}", row, kLanes[q + (high ? 1 : 0)]);
    if (w_ == DType::i4) {
      // Pairs (0, 4), (1, 5) of a word meet activation words 0 and 2 of piece q (low or
      // high halves); pairs (2, 6), (3, 7) words 1 and 3.
      const int w0 = pair < 2 ? 0 : 1;
      const char* sel = (pair % 2 == 0) ? "0x5410" : "0x7632";
      return fmt::format("__byte_perm(x_piece{}[u][{}].{}, x_piece{}[u][{}].{}, {})", row, q, kLanes[w0], row, q,
                         kLanes[w0 + 2], sel);
    }
    // i8: word q is elements 4q .. 4q + 3, activation piece q / 2, words 2 (q % 2) and + 1.
    const int piece = q / 2, w0 = 2 * (q % 2);
    const char* sel = pair == 0 ? "0x5410" : "0x7632";
    return fmt::format("__byte_perm(x_piece{}[u][{}].{}, x_piece{}[u][{}].{}, {})", row, piece, kLanes[w0], row, piece,
                       kLanes[w0 + 1], sel);
  }

  // The products of one step's weight pieces at unroll index u. Each product takes two
  // weight pairs per row (K positions 0-1 and 2-3 of the lane) and the activations at the
  // same positions.
  std::string products(const std::string& in) const {
    const std::string mma = bf16_ ? "kiln_mma_bf16" : "kiln_mma_f16";
    // Words of a 16-byte weight piece and the products one word feeds (pairs in twos).
    const int pairs = !dequant() ? 1 : w_ == DType::i4 || nibble_planes_ ? 4 : 2;
    std::string s;
    if (fold_offset_) s += in + "float xs[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // the activations' sums (one product a step)\n";
    s += fmt::format("{}#pragma unroll\n{}for (int f = 0; f < {}; ++f) {{\n", in, in, accs_);
    const std::string b = in + "  ";
    if (!dequant()) {
      // f16 / bf16 weights: words (0, 1) and (2, 3) each make one product.
      auto word = [&](int r, int w) {
        return fmt::format("w_piece[u][{}].{}", weights_a_ ? fmt::format("2 * f + {}", r) : "f", kLanes[w]);
      };
      for (int step = 0; step < 2; ++step)
        s += product(b, mma, 2 * step, 0, word(0, 2 * step), word(0, 2 * step + 1), word(1, 2 * step),
                     word(1, 2 * step + 1));
      return s + in + "}\n";
    }
    // Scaled after: the piece's products sum into `part`, which the two rows' scales fold
    // into the accumulators once.
    if (scales_after_) s += b + "float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n";
    for (int q = 0; q < 4; ++q) {
      s += b + "{\n";
      for (int r = 0; r < (weights_a_ ? 2 : 1); ++r)
        s += weight_pairs(b + "  ", weights_a_ ? fmt::format("2 * f + {}", r) : "f", q, fmt::format("p{}", r));
      // Nibble planes: both planes meet the activations of the byte pairs (0, 2) and (1, 3),
      // and the first alone adds to their sums.
      for (int first = 0; first < pairs; first += 2)
        s += product(b + "  ", mma, q, nibble_planes_ ? 0 : first, fmt::format("p0{}", first),
                     fmt::format("p0{}", first + 1), fmt::format("p1{}", first), fmt::format("p1{}", first + 1),
                     !nibble_planes_ || first == 0);
      s += b + "}\n";
    }
    // A sum of the piece's products, less (offset + z) times its activations' sum when folded.
    auto term = [&](int i, const char* c) {
      return fold_offset_ ? fmt::format("fmaf(xs[{}], -{}, part[{}])", i, c, i) : fmt::format("part[{}]", i);
    };
    if (scales_after_ && weights_a_) {  // C's rows g and g + 8 are this lane's weight rows
      s += b + "const float s0 = __uint_as_float(scale2[u][2 * f]), s1 = __uint_as_float(scale2[u][2 * f + 1]);\n";
      if (fold_offset_)
        s += b + "const float c0 = __uint_as_float(zero2[u][2 * f]), c1 = __uint_as_float(zero2[u][2 * f + 1]);\n";
      s += b + fmt::format("acc[f][0] = fmaf({}, s0, acc[f][0]); acc[f][1] = fmaf({}, s0, acc[f][1]);\n", term(0, "c0"),
                           term(1, "c0"));
      s += b + fmt::format("acc[f][2] = fmaf({}, s1, acc[f][2]); acc[f][3] = fmaf({}, s1, acc[f][3]);\n", term(2, "c1"),
                           term(3, "c1"));
    } else if (scales_after_) {  // C's columns 2 t, 2 t + 1 are the weight rows of lanes 8 t and 8 t + 4
      s += b + "const float s0 = __uint_as_float(__shfl_sync(0xffffffffu, scale2[u][f], 8 * t));\n";
      s += b + "const float s1 = __uint_as_float(__shfl_sync(0xffffffffu, scale2[u][f], 8 * t + 4));\n";
      s += b + "acc[f][0] = fmaf(part[0], s0, acc[f][0]); acc[f][1] = fmaf(part[1], s1, acc[f][1]);\n";
      s += b + "acc[f][2] = fmaf(part[2], s0, acc[f][2]); acc[f][3] = fmaf(part[3], s1, acc[f][3]);\n";
    }
    return s + in + "}\n";
  }

  // One mma: weight pairs (lo, hi) of the slot in A's or B's rows g (and, weights as A,
  // g + 8: lo1, hi1), with activation word q's pairs `first` and `first` + 1.
  std::string product(const std::string& in, const std::string& mma, int q, int first, const std::string& lo0,
                      const std::string& hi0, const std::string& lo1, const std::string& hi1,
                      bool activation_sums = true) const {
    if (weights_a_) {
      const bool sums = fold_offset_ && activation_sums;
      // A: rows g (slot 2 f) and g + 8 (slot 2 f + 1) at K positions lo, then hi; B: the
      // activations of row g at the same positions.
      const std::string b0 = activation_pair(0, q, first, false), b1 = activation_pair(0, q, first + 1, true);
      return fmt::format("{}{{ const unsigned a[4] = {{{}, {}, {}, {}}}; {}({}, a, {}, {});{} }}\n", in, lo0, lo1, hi0,
                         hi1, mma, scales_after_ ? "part" : "acc[f]", b0, b1,
                         sums ? fmt::format(" if (f == 0) {{ const unsigned ones[4] = {{{}, {}, {}, {}}}; "
                                                    "{}(xs, ones, {}, {}); }}",
                                                    ones(), ones(), ones(), ones(), mma, b0, b1)
                                      : "");
    }
    // A: activation rows g and g + 8 at K positions lo, then hi; B: the weight pairs.
    return fmt::format("{}{{ const unsigned a[4] = {{{}, {}, {}, {}}}; {}({}, a, {}, {}); }}\n", in,
                       activation_pair(0, q, first, false), activation_pair(1, q, first, false),
                       activation_pair(0, q, first + 1, true), activation_pair(1, q, first + 1, true), mma,
                       scales_after_ ? "part" : "acc[f]", lo0, hi0);
  }

  // Software-pipelined by one step: the first step's weight pieces and scales are loaded
  // before the loop, and each step loads the next one's before it multiplies, so that a
  // warp's DRAM loads stay in flight while it dequantises and multiplies.
  std::string main_loop() const {
    if (c_.stages > 0) return ring_loop();
    const int64_t stride = int64_t{c_.bk} * c_.warps_n;
    std::string s = fmt::format("  // The K loop: warp w takes steps w, w + {}, ... of {} elements.\n", c_.warps_n, c_.bk);
    s += fmt::format("  const {} kc0 = k_begin + warp * {};\n", k_type(), c_.bk);
    s += stream_arrays("  ", "_next");
    s += stream_loads("  ", "kc0", "_next");
    // Two steps a trip: the next step's registers alternate instead of being copied. Not
    // with two activation rows (M > 8), whose registers have no room for it.
    if (!two_rows_) s += "#pragma unroll 2\n";
    s += fmt::format("  for ({} kc = kc0; kc < k_end; kc += {}) {{\n", k_type(), stride);
    s += take_next("    ");
    s += stream_loads("    ", fmt::format("(kc + {})", stride), "_next");
    s += activation_loads("    ");
    s += fmt::format("#pragma unroll\n    for (int u = 0; u < {}; ++u) {{\n", unroll_);
    s += products("      ");
    s += "    }\n  }\n";
    return s;
  }

  // Pipelined through the ring: the first S - 1 steps' copies are issued before the loop;
  // each step refills the slot the step before it read (its registers already used, so
  // the copy cannot overtake the read), waits for its own slot and multiplies. The
  // scales, a sixty-fourth of the bytes or less, stay one step ahead in registers.
  std::string ring_loop() const {
    const int64_t stride = int64_t{c_.bk} * c_.warps_n;
    const int stages = c_.stages;
    std::string s = fmt::format("  // The K loop: warp w takes steps w, w + {}, ... of {} elements; their weight pieces "
                                "stream through a ring of {} steps.\n",
                                c_.warps_n, c_.bk, stages);
    s += fmt::format("  const {} kc0 = k_begin + warp * {};\n", k_type(), c_.bk);
    s += fmt::format("  const unsigned char* my_slots = kiln_smem + {} + threadIdx.x * 16u;  // after the warps' sums\n",
                     ir::gemv_sums_bytes(c_));
    s += "  const unsigned ring = (unsigned)__cvta_generic_to_shared(my_slots);\n";
    s += stream_arrays("  ", "_next", false);
    s += stream_loads("  ", "kc0", "_next", false);
    s += fmt::format("#pragma unroll\n  for (int ahead = 0; ahead < {}; ++ahead) {{\n", stages - 1);
    s += ring_copies("    ", fmt::format("(kc0 + ahead * {})", stride), "ahead");
    s += "  }\n  int slot = 0;\n";
    s += fmt::format("  for ({} kc = kc0; kc < k_end; kc += {}) {{\n", k_type(), stride);
    s += fmt::format("    const int refill = slot == 0 ? {} : slot - 1;\n", stages - 1);
    s += ring_copies("    ", fmt::format("(kc + {})", (stages - 1) * stride), "refill");
    s += fmt::format("    kiln_copy_async_wait_group<{}>();  // this step's slot has landed\n", stages - 1);
    s += ring_reads("    ", "slot");
    s += take_next("    ", false);
    s += stream_loads("    ", fmt::format("(kc + {})", stride), "_next", false);
    s += activation_loads("    ");
    s += fmt::format("#pragma unroll\n    for (int u = 0; u < {}; ++u) {{\n", unroll_);
    s += products("      ");
    s += "    }\n";
    s += fmt::format("    slot = slot == {} ? 0 : slot + 1;\n  }}\n", stages - 1);
    s += "  kiln_copy_async_wait_group<0>();  // no copy outlives the block\n";
    return s;
  }

  // The warps' accumulators summed in warp order, 8 columns of one row a thread, then the
  // epilogue (or, with a split K, the partials and the last slice's sum).
  std::string warp_sums() const {
    std::string s;
    if (split_columns_) {
      s += "  // Lane column t summed its own K positions (B's columns 2 t, 2 t + 1): add the four columns.\n";
      s += fmt::format("#pragma unroll\n  for (int f = 0; f < {}; ++f)\n#pragma unroll\n    for (int i = 0; i < 4; ++i) {{\n",
                       accs_);
      s += "      acc[f][i] += __shfl_xor_sync(0xffffffffu, acc[f][i], 1);\n";
      s += "      acc[f][i] += __shfl_xor_sync(0xffffffffu, acc[f][i], 2);\n    }\n";
    }
    s += "  // Each warp's accumulators into shared memory: [warp][row][column].\n";
    s += "  float* sums = reinterpret_cast<float*>(kiln_smem);\n";
    s += fmt::format("#pragma unroll\n  for (int f = 0; f < {}; ++f) {{\n", accs_);
    if (weights_a_) {  // C's rows are weight rows (columns of the output), its columns rows of M
      s += fmt::format("    float* at = sums + (warp * 16 + 2 * t) * {} + 16 * f + g;\n", c_.bn);
      s += fmt::format("    at[0] = acc[f][0]; at[{}] = acc[f][1]; at[8] = acc[f][2]; at[{} + 8] = acc[f][3];\n", c_.bn,
                       c_.bn);
    } else {
      s += fmt::format("    float* at = sums + (warp * 16 + g) * {} + 8 * f + 2 * t;\n", c_.bn);
      s += fmt::format("    at[0] = acc[f][0]; at[1] = acc[f][1]; at[8 * {}] = acc[f][2]; at[8 * {} + 1] = acc[f][3];\n",
                       c_.bn, c_.bn);
    }
    s += "  }\n  __syncthreads();\n";
    const int per_row = c_.bn / 8;
    s += fmt::format("  for (int item = (int)threadIdx.x; item < {}; item += {}) {{\n", g_.m * per_row, 32 * c_.warps_n);
    s += fmt::format("    const int m = item / {}, c = item % {} * 8;\n", per_row, per_row);
    s += "    float total[8] = {};\n";
    s += fmt::format("    for (int w = 0; w < {}; ++w)\n#pragma unroll\n      for (int e = 0; e < 8; ++e) total[e] += sums[(w * 16 "
                     "+ m) * {} + c + e];\n",
                     c_.warps_n, c_.bn);
    if (!split_) {
      s += "    " + epilogue_.call("m", "n0 + c", "total");
      return s + "  }\n";
    }
    s += fmt::format("    float* part = {} + ((long long)blockIdx.y * {} + m) * {} + n0 + c;\n", scratch_name("partials"),
                     g_.m, padded_n_);
    s += "#pragma unroll\n    for (int e = 0; e < 8; ++e) part[e] = total[e];\n  }\n";
    s += "  __syncthreads();  // the partials are written before the ticket is taken\n";
    s += "  __shared__ bool last_slice;\n  if (threadIdx.x == 0) {\n";
    s += fmt::format("    last_slice = kiln_take_ticket(&{}[blockIdx.x]) == {}u;\n", scratch_name("tickets"),
                     c_.split_k - 1);
    s += fmt::format("    if (last_slice) {}[blockIdx.x] = 0;  // the next launch starts from zero\n", scratch_name("tickets"));
    s += "  }\n  __syncthreads();\n  if (!last_slice) return;\n";
    s += fmt::format("  for (int item = (int)threadIdx.x; item < {}; item += {}) {{\n", g_.m * per_row, 32 * c_.warps_n);
    s += fmt::format("    const int m = item / {}, c = item % {} * 8;\n", per_row, per_row);
    s += "    float total[8] = {};\n";
    s += fmt::format("    for (int z = 0; z < {}; ++z) {{  // in slice order: the same bits every run\n", c_.split_k);
    s += fmt::format("      const float* part = {} + ((long long)z * {} + m) * {} + n0 + c;\n", scratch_name("partials"),
                     g_.m, padded_n_);
    s += "#pragma unroll\n      for (int e = 0; e < 8; ++e) total[e] += __ldcg(part + e);\n    }\n";
    s += "    " + epilogue_.call("m", "n0 + c", "total");
    return s + "  }\n";
  }

  const ir::Kernel& k_;
  const ir::TileConfig& c_;
  const ir::GemmCore& g_;
  std::vector<std::string> params_;
  GemmEpilogue epilogue_;
  DType w_ = DType::f16;
  bool bf16_ = false;
  int lane_elems_ = 8, tiles_ = 1, unroll_ = 1, pieces_ = 1;
  bool two_rows_ = false, split_ = false;
  bool weights_a_ = false;  // the weight is mma's A operand (M <= 8)
  // The scale multiplies each product's fp32 sum once a piece, not every weight pair,
  // where every sum belongs to one group of one weight row: where a step's K (all 4 lane
  // columns) lies in one group, or, with the weight as A and M <= 2, by splitting B's
  // columns (below).
  bool scales_after_ = false;
  // M <= 2 with the weight as A and groups shorter than a step: B's column 2 c + m holds
  // activation row m at the K positions of lane column c only, so that each sum covers one
  // lane's piece; the lanes' columns are added at the end.
  bool split_columns_ = false;
  // The pairs stay biased (w - z + offset, exact) and each product's fp32 sum takes
  // (offset + z) times the sum of its activations, which one more product a step gives
  // (the same activations against ones). One fma a sum instead of a packed subtract a pair.
  bool fold_offset_ = false;
  // bf16 products of i8 weights: a byte needs 8 mantissa bits and bf16 has 7, so each
  // byte w = 16 h + l goes in as two exact bf16 values, 128 + l and 2048 + 16 (h + 8), in
  // two products against the same activations; their sums hold (w + 2304) x, folded.
  bool nibble_planes_ = false;
  int accs_ = 1;            // accumulator fragments: one per 16 weight rows, or per 8
  int64_t slice_ = 0, col_tiles_ = 0, padded_n_ = 0;
};

}  // namespace

std::string emit_gemm_gemv(const ir::Kernel& k) { return GemvEmitter(k).emit(); }

std::string gemv_helper_definitions(const std::string& code) {
  return called_helpers(code, kGemvHelpers, std::size(kGemvHelpers));
}

LaunchDims gemm_gemv_launch_dims(const ir::Kernel& k) {
  const ir::TileConfig& c = k.config;
  LaunchDims d;
  d.grid[0] = static_cast<unsigned>(ceil_div(k.gemm.n, c.bn));
  d.grid[1] = static_cast<unsigned>(std::max(1, c.split_k));
  d.block[0] = static_cast<unsigned>(32 * c.warps_n);
  d.shared_bytes = static_cast<unsigned>(ir::gemv_shared_bytes(k, c));
  return d;
}

}  // namespace kiln::codegen
