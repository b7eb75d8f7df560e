// The dequant_wgmma schedule of a gemm kernel (ir/tile_config_gemm_dequant_wgmma.cpp):
// up to 128 rows of activations x [M, K] against an i4 / i8 weight w [N, K], computed
// transposed, y^T = dequant(w) x^T, so that the weight is wgmma's A operand, which may
// come from registers: each thread dequantises its own fragment of the weight there with
// bit tricks, and the dequantised weight is never written anywhere. The activation rows
// are the product's N (bm, M rounded up to 8) and come from shared memory.
//
// K goes in steps of bk (64 bytes of a weight row). Each step, thread (g, t) of a warp
// (g = lane / 4, t = lane % 4) copies the 16-byte piece t of each of its weight rows
// (rows g and g + 8 of its warp's 16, in each of its m64 fragments) into its own slots of
// a ring of `stages` steps (cp.async: stages - 1 steps in flight; no other thread reads
// them, so its own wait suffices). The piece is E = 32 (i4) or 16 (i8) consecutive
// elements of K, while the A fragment of one k16 product wants K positions 2t, 2t + 1,
// 2t + 8 and 2t + 9 of each row. Since a product sums over K, the fragment may take any
// fixed permutation of K, applied to B alike: the pairs that the bit tricks produce (an
// i4 word's nibbles (i, i + 4); an i8 word's bytes (0, 2) and (1, 3)) are taken as the
// fragment's pairs, and the activations are permuted to match when the block turns
// their step into the B tile. With the piece's pair c of word q going to K positions
// 8 (4q + c) + 2t of the step as the products see it:
//   i4: word q, pair i (elements 8q + i, 8q + i + 4 of the piece) is product 2q + i / 2,
//       registers a0 / a1 (rows g, g + 8) for even i, a2 / a3 for odd i;
//   i8: word q, pair j (elements 4q + j, 4q + j + 2) is product q, a0 / a1 or a2 / a3.
// The activations' step lands in a second ring as they are stored (cp.async, 16-byte
// pieces, XOR-swizzled by row so that reading them back is conflict-free); the block
// turns the step it multiplies next into the B tile (128-byte swizzle, K-major: 8-element
// chunks of K), each 16-byte piece of a row becoming four pairs in four chunks.
//
// The scale (and zero point) of each piece travel with it: the thread also copies the
// aligned 4-byte word holding each into its own slot (a register FIFO of loads stalled
// each step on the load it moved, one step after it was issued).
//
// A step: wait for the own copies of the next step, one barrier (the B tile and the
// copies of every thread are in), copy the step stages - 1 ahead, then for each k16
// product: dequantise its fragments into one of four register sets taken in turn (the
// product four back, which read it, has finished: three products stay in flight, so
// the small products' latency overlaps), issue it; then write the next step's B tile
// (every product of the step before has finished). After the loop the epilogue runs on
// each accumulator (one element a call: the accumulators' columns are activation rows);
// with split K each slice writes fp32 partials and the last slice of a column tile sums
// them in slice order.
//
// The dequant_mma schedule is the same on mma.sync m16n8k16 (sm_80 and up): the A
// fragment of one warp's 16 weight rows in a wgmma is the A fragment of an m16n8k16
// product, register for register, so the copies, the ring, the dequantising and the B
// tile stay as they are. Each warp owns its own 16 x frags weight rows and multiplies
// them against all bm activation rows: per k16, its fragments once, then ldmatrix brings
// B's registers for two n8 tiles at a time from the B tile (chunks 2 kk and 2 kk + 1 of
// each row, swizzled so that the 8 rows of a matrix fall in distinct banks) and every
// (fragment, tile) pair is one product. The products are synchronous, so one barrier a
// step covers both tiles: every warp has read step i - 1's tile before any thread passes
// step i's barrier and rewrites it with step i + 1.
#include <fmt/format.h>

#include <algorithm>

#include "codegen/gemm_common.h"
#include "codegen/gemm_emitter.h"
#include "codegen/gemm_epilogue.h"
#include "codegen/kernel_params.h"
#include "codegen/scalar_emit.h"
#include "ir/error.h"
#include "ir/tile_config.h"

namespace kiln::codegen {

namespace {

constexpr const char* kWords[] = {"x", "y", "z", "w"};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

class DequantWgmmaEmitter {
public:
  explicit DequantWgmmaEmitter(const ir::Kernel& k)
      : k_(k), c_(k.config), g_(k.gemm), params_(param_names(k)), epilogue_(k, params_, 1) {
    i4_ = k.args.at(static_cast<size_t>(g_.b.arg)).type.dtype == DType::i4;
    bf16_ = g_.operand_dtype == DType::bf16;
    mma_ = c_.schedule == ir::kDequantMma;
    warpgroups_ = c_.warps_n / 4;
    threads_ = 32 * c_.warps_n;
    // m64 fragments a warpgroup (wgmma), or m16 fragments a warp (mma.sync).
    frags_ = mma_ ? c_.bn / (16 * c_.warps_n) : c_.bn / (64 * warpgroups_);
    tiles_ = c_.bm / 8;
    products_ = c_.bk / 16;
    pieces_ = c_.bk / 8;  // 16-byte pieces of an activation row a step
    x_step_ = int64_t{c_.bm} * c_.bk * 2;
    split_ = c_.split_k > 1;
    slice_ = ir::gemm_k_slice(k, c_);
    col_tiles_ = ceil_div(g_.n, c_.bn);
    const ir::GemmDequant& d = g_.b.dequant;
    scale_dtype_ = k.args.at(static_cast<size_t>(d.scale)).type.dtype;
    zero_ = d.zero >= 0;
    integer_zero_ = !zero_ || is_storage_only(k.args.at(static_cast<size_t>(d.zero)).type.dtype);
    // Packed-pair math (exact up to the one rounding of the product by the scale) where
    // the scale is of the operand dtype, a zero point is an integer and the biased value
    // fits the dtype's mantissa (an i8 byte does not fit bf16's 7 bits); else fp32.
    packed_ = scale_dtype_ == g_.operand_dtype && integer_zero_ && !(bf16_ && !i4_);
    ahead_ = c_.stages - 1;
    // A slot: the weight pieces (64 bytes a row), then each thread's 4-byte words holding
    // the scale (and zero point) of each of its pieces.
    words_ = zero_ ? 2 : 1;
    w_slot_ = int64_t{c_.bn} * 64 + int64_t{words_} * 2 * frags_ * threads_ * 4;
  }

  std::string emit() const {
    std::string s = header();
    if (split_) s += scratch();
    s += epilogue_.functions() + (mma_ ? "" : product_function()) + pack_function() + signature() + setup() +
         lambdas() + (mma_ ? mma_main_loop() : main_loop()) + (split_ ? split_epilogue() : epilogue());
    return s + "}\n";
  }

private:
  const std::string& param(int arg) const { return params_.at(static_cast<size_t>(arg)); }
  std::string name(const char* what) const { return fmt::format("{}_{}", k_.name, what); }
  const char* type() const { return bf16_ ? "bf16" : "f16"; }

  std::string header() const {
    const LaunchDims d = gemm_dequant_wgmma_launch_dims(k_);
    const ir::GemmDequant& dq = g_.b.dequant;
    std::string s = gemm_header_title(k_);
    const int groups = mma_ ? c_.warps_n : warpgroups_;
    s += fmt::format("// Config {}:\n//   grid {} x {} blocks of {} threads ({} {}{}), {} bytes of shared memory, {} "
                     "block{} an SM\n",
                     c_.str(), d.grid[0], d.grid[1], d.block[0], groups, mma_ ? "warp" : "warpgroup",
                     groups == 1 ? "" : "s", d.shared_bytes, d.blocks_per_sm, d.blocks_per_sm == 1 ? "" : "s");
    if (mma_)
      s += fmt::format("//   schedule dequant_mma: y^T = dequant(w) x^T; each warp owns {} weight rows as {} mma.sync "
                       "m16n8k16 A fragment{} (dequantised in registers), against the {} activation rows (of {}) as {} "
                       "tile{} of n8 (ldmatrix from the B tile)\n",
                       16 * frags_, frags_, frags_ == 1 ? "" : "s", c_.bm, g_.m, tiles_, tiles_ == 1 ? "" : "s");
    else
      s += fmt::format("//   schedule dequant_wgmma: y^T = dequant(w) x^T; each warpgroup owns {} weight rows as {} wgmma "
                       "m64n{}k16 fragment{} (A from registers, dequantised there), the {} activation rows (of {}) are N\n",
                       64 * frags_, frags_, c_.bm, frags_ == 1 ? "" : "s", c_.bm, g_.m);
    s += fmt::format("//   B %{}: {} weights [N, K], (w - z) * s with scales %{}{} per {} elements of K, {}\n",
                     k_.args[static_cast<size_t>(g_.b.arg)].name, i4_ ? "i4" : "i8",
                     k_.args[static_cast<size_t>(dq.scale)].name,
                     zero_ ? fmt::format(" and zero points %{}", k_.args[static_cast<size_t>(dq.zero)].name) : "",
                     dq.group, packed_ ? "packed-pair math" : "fp32 math rounded to the operand dtype");
    s += fmt::format("//   K in steps of {} through a ring of {} steps ({} ahead): each thread's own 16-byte weight "
                     "pieces with the 4-byte words of their scales{}, and the activations' step, which the block "
                     "permutes into the B tile\n",
                     c_.bk, c_.stages, ahead_, zero_ ? " and zero points" : "");
    if (split_)
      s += fmt::format("//   K in {} slices of {}; each column tile's last slice sums the fp32 partials in slice order\n",
                       c_.split_k, slice_);
    s += "//   epilogue: " + epilogue_.describe() + ", one element a call\n";
    return s;
  }

  std::string scratch() const {
    // 16-byte aligned: the last slice reads four columns at a time.
    return fmt::format("__device__ __align__(16) float {}[{}];\n__device__ int {}[{}];\n", name("partials"),
                       int64_t{c_.split_k} * g_.m * g_.n, name("tickets"), col_tiles_);
  }

  // acc += W X^T over 16 of K: the warpgroup's 64 weight rows as A fragments in registers,
  // the B tile's bm activation rows K-major in shared memory.
  std::string product_function() const {
    const int regs = c_.bm / 2;
    std::vector<std::string> dregs, outs;
    for (int i = 0; i < regs; ++i) {
      dregs.push_back(fmt::format("%{}", i));
      outs.push_back(fmt::format("\"+f\"(acc[{}])", i));
    }
    std::string s = fmt::format(
        "// acc += A B over 16 of K: 64 weight rows as the warpgroup's A fragments, {} activation rows K-major.\n",
        c_.bm);
    s += fmt::format("static __device__ __forceinline__ void {}(float (&acc)[{}], const unsigned (&a)[4], "
                     "unsigned long long b) {{\n",
                     name("product"), regs);
    s += fmt::format("  asm volatile(\"{{ .reg .pred p; setp.ne.b32 p, %{}, 0;\\n\"\n", regs + 5);
    s += fmt::format("               \"wgmma.mma_async.sync.aligned.m64n{}k16.f32.{}.{} {{{}}}, {{%{}, %{}, %{}, %{}}}, "
                     "%{}, p, 1, 1, 0;\\n}}\"\n",
                     c_.bm, type(), type(), fmt::join(dregs, ", "), regs, regs + 1, regs + 2, regs + 3, regs + 4);
    s += fmt::format("               : {}\n", fmt::join(outs, ", "));
    s += "               : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(b), \"n\"(1) : \"memory\");\n}\n";
    return s;
  }

  // Two fp32 values as a pair of the operand dtype (the fp32 path's last rounding).
  std::string pack_function() const {
    if (packed_) return "";
    std::string s = fmt::format("static __device__ __forceinline__ unsigned {}(float lo, float hi) {{\n", name("pair"));
    if (bf16_) s += "  const __nv_bfloat162 r = __floats2bfloat162_rn(lo, hi);\n";
    else s += "  const __half2 r = __floats2half2_rn(lo, hi);\n";
    return s + "  return *reinterpret_cast<const unsigned*>(&r);\n}\n";
  }

  std::string signature() const {
    // Where several blocks fit an SM, the bound caps the registers so that they do: one
    // block of 8 warps leaves each scheduler two warps, too few to hide a step's latency.
    return fmt::format("extern \"C\" __global__ void __launch_bounds__({}, {}) {}({}) {{\n", threads_,
                       gemm_dequant_wgmma_launch_dims(k_).blocks_per_sm, k_.name,
                       fmt::join(gemm_pointer_params(k_, params_), ", "));
  }

  int64_t row_bytes() const { return i4_ ? g_.k / 2 : g_.k; }
  // The type of indices into the scales and zero points (and of their byte offsets).
  const char* index_type() const { return g_.n * groups() * 4 < (int64_t{1} << 31) ? "int" : "long long"; }
  int64_t groups() const { return g_.k / g_.b.dequant.group; }

  std::string setup() const {
    const ir::GemmDequant& dq = g_.b.dequant;
    std::string s = "  extern __shared__ __align__(1024) unsigned char kiln_smem[];\n";
    s += "  // The two B tiles first (1024-byte aligned: the 128-byte swizzle repeats every 8 rows), then the\n";
    s += "  // activations' ring, then the weights' ring.\n";
    s += "  const unsigned smem = ((unsigned)__cvta_generic_to_shared(kiln_smem) + 1023u) & ~1023u;\n";
    s += fmt::format("  const unsigned b_tiles = smem, x_ring = smem + {}u, w_ring = x_ring + {}u;\n", 2 * x_step_,
                     c_.stages * x_step_);
    s += "  unsigned char* const smem_bytes = kiln_smem + (smem - (unsigned)__cvta_generic_to_shared(kiln_smem));\n";
    if (mma_) s += "  const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;\n";
    else s += "  const int tid = (int)threadIdx.x, lane = tid & 31, warp = (tid >> 5) & 3, warpgroup = tid >> 7;\n";
    s += "  const int g = lane >> 2, t = lane & 3;  // fragment row, and the piece of K this thread copies\n";
    s += fmt::format("  const int n0 = (int)blockIdx.x * {};\n", c_.bn);
    s += "  [[maybe_unused]] const unsigned batch = 0;\n";
    if (split_) {
      s += fmt::format("  const int k_begin = (int)blockIdx.y * {};\n", slice_);
      s += fmt::format("  const int steps = min({}, {} - k_begin) / {};\n", slice_, g_.k, c_.bk);
    } else {
      s += fmt::format("  constexpr int k_begin = 0, steps = {};\n", g_.k / c_.bk);
    }
    s += fmt::format("  // This thread's weight rows: rows g and g + 8 of its warp's 16 in each {} fragment\n"
                     "  // (clamped to the last row: rows past N are computed and dropped).\n", mma_ ? "m16" : "m64");
    s += fmt::format("  const unsigned char* w_src[{}][2];\n  {} s_row[{}][2];\n  bool w_in[{}][2];\n", frags_, index_type(),
                     frags_, frags_);
    s += fmt::format("#pragma unroll\n  for (int f = 0; f < {}; ++f)\n#pragma unroll\n    for (int r = 0; r < 2; ++r) {{\n",
                     frags_);
    s += fmt::format("      const int row = n0 + {} + g + 8 * r;\n", fragment_row());
    s += fmt::format("      w_in[f][r] = row < {};\n", g_.n);
    s += fmt::format("      const long long clamped = (long long)min(row, {});\n", g_.n - 1);
    s += fmt::format("      w_src[f][r] = reinterpret_cast<const unsigned char*>({}) + clamped * {}ll + k_begin / {} + t * 16;\n",
                     param(g_.b.arg), row_bytes(), i4_ ? 2 : 1);
    s += fmt::format("      s_row[f][r] = ({})clamped * {};\n", index_type(), groups());
    s += "    }\n";
    (void)dq;
    if (mma_) {  // a product's four accumulators per (fragment, n8 tile)
      s += fmt::format("  float acc[{}][{}][4];\n", frags_, tiles_);
      s += fmt::format("#pragma unroll\n  for (int f = 0; f < {}; ++f)\n#pragma unroll\n    for (int j = 0; j < {}; ++j)\n"
                       "#pragma unroll\n      for (int i = 0; i < 4; ++i) acc[f][j][i] = 0.0f;\n",
                       frags_, tiles_);
    } else {
      s += fmt::format("  float acc[{}][{}];\n", frags_, c_.bm / 2);
      s += fmt::format("#pragma unroll\n  for (int f = 0; f < {}; ++f)\n#pragma unroll\n    for (int i = 0; i < {}; ++i) "
                       "acc[f][i] = 0.0f;\n",
                       frags_, c_.bm / 2);
    }
    return s;
  }

  // The group of this thread's piece of step i (code), as an index into a row's groups.
  std::string group_code(const std::string& k0) const {
    const int64_t group = std::min<int64_t>(g_.b.dequant.group, g_.k);
    return fmt::format("(unsigned)({} + t * {}) / {}u", k0, ir::dequant_wgmma_span(k_), group);
  }

  // The byte of element `at` (code) of a scale or zero point argument.
  std::string byte_of(int arg, const std::string& at) const {
    const DType t = k_.args.at(static_cast<size_t>(arg)).type.dtype;
    if (t == DType::i4) return fmt::format("(({}) >> 1)", at);
    return fmt::format("(({}) * {})", at, dtype_bytes(t));
  }
  int64_t total_bytes(int arg) const {
    const DType t = k_.args.at(static_cast<size_t>(arg)).type.dtype;
    const int64_t n = g_.n * groups();
    return t == DType::i4 ? (n + 1) / 2 : n * dtype_bytes(t);
  }

  // The ring slot's word w (0: scale, 1: zero point) of this thread's piece (f, r).
  std::string word_at(const std::string& slot, int w) const {
    return fmt::format("w_ring + {} * {}u + {}u + (({} * {} + f * 2 + r) * {} + tid) * 4u", slot, w_slot_,
                       int64_t{c_.bn} * 64, w, 2 * frags_, threads_);
  }

  // The copies of the 4-byte words that hold each piece's scale (and zero point): the
  // aligned word around the element, no byte past the argument's end.
  std::string word_copies() const {
    const ir::GemmDequant& dq = g_.b.dequant;
    std::string s = "      const unsigned group = " + group_code("k0") + ";\n";
    s += fmt::format("#pragma unroll\n      for (int f = 0; f < {}; ++f)\n#pragma unroll\n        for (int r = 0; r < 2; ++r) {{\n",
                     frags_);
    s += fmt::format("          const {} at = s_row[f][r] + group;\n", index_type());
    int w = 0;
    for (int arg : {dq.scale, dq.zero}) {
      if (arg < 0) continue;
      // Whole words (the argument's bytes a multiple of 4) need no bound on the copy.
      const std::string size = total_bytes(arg) % 4 == 0
                                   ? "4u"
                                   : fmt::format("(unsigned)min(({})4, ({}){} - from)", index_type(), index_type(),
                                                 total_bytes(arg));
      s += fmt::format("          {{\n            const {} from = {} & ~3;\n", index_type(), byte_of(arg, "at"));
      s += fmt::format("            kiln_copy_async4_zfill({}, reinterpret_cast<const unsigned char*>({}) + from, {});\n"
                       "          }}\n",
                       word_at("slot", w++), param(arg), size);
    }
    return s + "        }\n";
  }

  // A 16-bit float's bits as fp32 bits.
  std::string float_bits(DType t, const std::string& bits) const {
    if (t == DType::bf16) return fmt::format("(({}) << 16)", bits);
    return fmt::format("__float_as_uint(__half2float(__ushort_as_half((unsigned short)({}))))", bits);
  }

  // This step's scales and zero points from the words in the ring: packed pairs of the
  // operand dtype (the zero point joined with the bit trick's offset), or fp32 bits.
  std::string word_reads() const {
    const ir::GemmDequant& dq = g_.b.dequant;
    std::string s = "    const unsigned group = " + group_code(fmt::format("k_begin + i * {}", c_.bk)) + ";\n";
    s += fmt::format("    unsigned scale2[{}][2]{};\n", frags_,
                     zero_travels() ? fmt::format(", zero2[{}][2]", frags_) : "");
    s += fmt::format("#pragma unroll\n    for (int f = 0; f < {}; ++f)\n#pragma unroll\n      for (int r = 0; r < 2; ++r) {{\n",
                     frags_);
    s += fmt::format("        const {} at = s_row[f][r] + group;\n", index_type());
    s += fmt::format("        const unsigned slot = (unsigned)(i % {});\n", c_.stages);
    const std::string read = "*reinterpret_cast<const unsigned*>(smem_bytes + ({} - smem))";
    s += "        const unsigned sw = " + fmt::format(fmt::runtime(read), word_at("slot", 0)) + ";\n";
    if (dtype_bytes(scale_dtype_) == 2) {
      s += "        const unsigned s_bits = (sw >> ((unsigned)(at & 1) * 16u)) & 0xffffu;\n";
      s += std::string("        scale2[f][r] = ") +
           (packed_ ? "s_bits * 0x10001u" : float_bits(scale_dtype_, "s_bits")) + ";\n";
    } else {
      s += "        scale2[f][r] = sw;\n";
    }
    if (zero_) {
      const DType zt = k_.args.at(static_cast<size_t>(dq.zero)).type.dtype;
      s += "        const unsigned zw = " + fmt::format(fmt::runtime(read), word_at("slot", 1)) + ";\n";
      std::string z;
      if (zt == DType::i4) {
        s += "        const unsigned nibble = (zw >> ((unsigned)((at >> 1) & 3) * 8u + (unsigned)(at & 1) * 4u)) & 0xfu;\n";
        z = "(float)((int)(nibble ^ 8u) - 8)";
      } else if (zt == DType::i8) {
        z = "(float)(signed char)(zw >> ((unsigned)(at & 3) * 8u))";
      } else if (dtype_bytes(zt) == 2) {
        z = fmt::format("__uint_as_float({})", float_bits(zt, "((zw >> ((unsigned)(at & 1) * 16u)) & 0xffffu)"));
      } else {
        z = "__uint_as_float(zw)";
      }
      if (packed_) {
        const double offset = i4_ ? (bf16_ ? 136 : 1032) : 1152;
        const std::string total = fmt::format("{:.1f}f + {}", offset, z);
        s += "        zero2[f][r] = " +
             (bf16_ ? fmt::format("kiln_bf16_pair({}, {})", total, total) : fmt::format("kiln_pair_f16({})", total)) +
             ";\n";
      } else {
        s += fmt::format("        zero2[f][r] = __float_as_uint({});\n", z);
      }
    } else if (zero_travels()) {
      s += "        zero2[f][r] = 0u;  // +0.0f\n";
    }
    return s + "      }\n";
  }

  // Whether the zero (bias) of a piece travels with its scale, or is one literal pair.
  bool zero_travels() const { return zero_ || !packed_; }
  std::string offset_literal() const {
    return i4_ ? (bf16_ ? "0x43084308u" : "0x64086408u") : "0x64806480u";
  }

  // `for (int it = first; it < count; it += stride) {` where first < stride; as a loop of
  // count / stride trips, unrolled, where that is whole (the compiler cannot see that
  // first < stride, so it would keep a general loop and recompute its addresses each step).
  std::string strided_loop(const std::string& in, const std::string& first, int64_t count, int64_t stride) const {
    if (count % stride != 0) return fmt::format("{}for (int it = {}; it < {}; it += {}) {{\n", in, first, count, stride);
    return fmt::format("{}#pragma unroll\n{}for (int trip = 0; trip < {}; ++trip) {{\n{}  const int it = {} + trip * {};\n",
                       in, in, count / stride, in, first, stride);
  }

  // The kernel's steps as lambdas: the copies of a step, the loads of a step's scales and
  // the permutation of a step's activations into a B tile.
  std::string lambdas() const {
    std::string s;
    s += "  // The copies of step i into ring slot i % stages (none past the slice), closed as one group.\n";
    s += "  const auto copy_step = [&](int i) {\n";
    s += "    if (i < steps) {\n";
    s += fmt::format("      const int slot = i % {};\n", c_.stages);
    s += fmt::format("#pragma unroll\n      for (int f = 0; f < {}; ++f)\n#pragma unroll\n        for (int r = 0; r < 2; ++r)\n",
                     frags_);
    s += fmt::format("          kiln_copy_async16_zfill(w_ring + slot * {}u + ((f * 2 + r) * {} + tid) * 16u, w_src[f][r] + "
                     "(long long)i * 64, w_in[f][r] ? 16u : 0u);\n",
                     w_slot_, threads_);
    s += fmt::format("      const int k0 = k_begin + i * {};\n", c_.bk);
    s += word_copies();
    s += strided_loop("      ", "tid", c_.bm * pieces_, threads_);
    s += fmt::format("        const int m = it / {}, p = it % {};\n", pieces_, pieces_);
    s += fmt::format("        const bool in = m < {};\n", g_.m);
    s += fmt::format("        kiln_copy_async16_zfill(x_ring + slot * {}u + (m * {} + (p ^ (m & 7))) * 16u, {} + "
                     "(long long)(in ? m : 0) * {}ll + k0 + 8 * p, in ? 16u : 0u);\n",
                     x_step_, pieces_, param(g_.a.arg), g_.k);
    s += "      }\n    }\n    kiln_copy_async_commit();\n  };\n";

    s += "  // The activations of step i (ring slot i % stages) as the B tile `tile`: piece p of row m\n";
    s += "  // (elements 8p .. 8p + 7 of the step) is piece q of thread column t's weight span, and its four\n";
    s += "  // pairs go to chunks 4q + c (word t) of the row, where the weights' pairs meet them.\n";
    s += "  const auto permute_step = [&](int i, unsigned tile) {\n";
    s += fmt::format("    const unsigned char* const from = smem_bytes + {}u + (i % {}) * {}u;\n", 2 * x_step_, c_.stages,
                     x_step_);
    s += "    const int r = lane & 7, tt = lane >> 3;  // a warp: 8 rows x the 4 thread columns\n";
    s += strided_loop("    ", "(tid >> 5)", c_.bm / 8 * (pieces_ / 4), threads_ / 32);
    s += fmt::format("      const int m = (it % {}) * 8 + r, q = it / {};\n", c_.bm / 8, c_.bm / 8);
    s += fmt::format("      const int p = {};\n", i4_ ? "4 * tt + q" : "2 * tt + q");
    s += fmt::format("      const uint4 v = *reinterpret_cast<const uint4*>(from + (m * {} + (p ^ r)) * 16);\n", pieces_);
    s += "#pragma unroll\n      for (int c = 0; c < 4; ++c) {\n";
    if (i4_) {
      s += "        // i4: pair c is elements (c, c + 4) of the piece.\n";
      s += "        const unsigned lo = c < 2 ? v.x : v.y, hi = c < 2 ? v.z : v.w;\n";
    } else {
      s += "        // i8: pair c = 2a + j is elements (4a + j, 4a + j + 2) of the piece.\n";
      s += "        const unsigned lo = c < 2 ? v.x : v.z, hi = c < 2 ? v.y : v.w;\n";
    }
    s += "        const unsigned pair = __byte_perm(lo, hi, (c & 1) ? 0x7632 : 0x5410);\n";
    s += "        const int chunk = 4 * q + c;\n";
    s += fmt::format("        *reinterpret_cast<unsigned*>(smem_bytes + (tile - smem) + (chunk >> 3) * {}u + m * 128 + "
                     "(((chunk & 7) ^ r) << 4) + tt * 4) = pair;\n",
                     c_.bm * 128);
    s += "      }\n    }\n";
    if (!mma_) s += "    asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");  // visible to wgmma's reads\n";
    s += "  };\n";
    return s;
  }

  // The dequantised pair i (i4: nibbles (i, i + 4) of `word`; i8: bytes (i, i + 2)) of
  // fragment f's row r with this step's scale and zero.
  std::string pair_code(const std::string& word, int i, const std::string& f, int r) const {
    const std::string sc = fmt::format("scale2[{}][{}]", f, r);
    const std::string zr = zero_travels() ? fmt::format("zero2[{}][{}]", f, r) : offset_literal();
    const unsigned magic = bf16_ ? 0x43004300u : 0x64006400u;
    std::string biased;
    if (i4_)
      biased = fmt::format("kiln_and_xor({}{}, 0x000f000fu, 0x{:08x}u)", word, i ? fmt::format(" >> {}", 4 * i) : "",
                           magic | 0x00080008u);
    else if (!bf16_)
      biased = fmt::format("__byte_perm({} ^ 0x80808080u, 0x64646464u, {})", word, i ? "0x4341" : "0x4240");
    if (packed_)
      return fmt::format("kiln_mul2_{}(kiln_sub2_{}({}, {}), {})", type(), type(), biased, zr, sc);
    // fp32: the exact weight values, then (w - z) * s, rounded once to the operand dtype.
    std::string lo, hi;
    if (i4_ || !bf16_) {
      const double offset = i4_ ? (bf16_ ? 136 : 1032) : 1152;
      if (bf16_) {
        lo = fmt::format("(__uint_as_float(({}) << 16) - {:.1f}f)", biased, offset);
        hi = fmt::format("(__uint_as_float(({}) & 0xffff0000u) - {:.1f}f)", biased, offset);
      } else {
        lo = fmt::format("(__half2float(__ushort_as_half((unsigned short)(({}) & 0xffffu))) - {:.1f}f)", biased, offset);
        hi = fmt::format("(__half2float(__ushort_as_half((unsigned short)(({}) >> 16))) - {:.1f}f)", biased, offset);
      }
    } else {
      // i8 into bf16: byte b (offset binary) in the low byte of 2^23's mantissa.
      lo = fmt::format("(__uint_as_float(__byte_perm({} ^ 0x80808080u, 0x4b000000u, 0x765{})) - 8388736.0f)", word, i);
      hi = fmt::format("(__uint_as_float(__byte_perm({} ^ 0x80808080u, 0x4b000000u, 0x765{})) - 8388736.0f)", word,
                       i + 2);
    }
    const std::string z = fmt::format("__uint_as_float({})", zr), s = fmt::format("__uint_as_float({})", sc);
    return fmt::format("{}(({} - {}) * {}, ({} - {}) * {})", name("pair"), lo, z, s, hi, z, s);
  }

  // The k16 product kk of a step: its A fragments from word q of each weight piece
  // (i4: q = kk / 2, pairs 2 (kk % 2) and + 1; i8: q = kk, pairs 0 and 1), into register
  // set kk % 2 (a0 / a1: rows g and g + 8 at the first pair, a2 / a3 at the second).
  std::string product_code(int kk) const {
    const int q = i4_ ? kk / 2 : kk, first = i4_ ? 2 * (kk % 2) : 0, set = kk % 4;
    std::string s = fmt::format("    // Product {} of the step: word {} of each piece, pairs {} and {}.\n", kk, q, first,
                                first + 1);
    s += "    kiln_wgmma_wait<3>();  // the product four back, which read this register set, has finished\n";
    s += fmt::format("#pragma unroll\n    for (int f = 0; f < {}; ++f) {{\n", frags_);
    for (int reg = 0; reg < 4; ++reg) {
      const int r = reg & 1, pair = first + (reg >> 1);
      s += fmt::format("      a[{}][f][{}] = {};\n", set, reg, pair_code(fmt::format("w[f][{}].{}", r, kWords[q]), pair, "f", r));
    }
    s += "    }\n    kiln_wgmma_fence();\n";
    s += fmt::format("#pragma unroll\n    for (int f = 0; f < {}; ++f)\n", frags_);
    s += fmt::format("      {}(acc[f], a[{}][f], kiln_wgmma_desc(tile + {}u, 16u, 1024u));\n", name("product"), set,
                     (kk / 4) * c_.bm * 128 + (kk % 4) * 32);
    return s + "    kiln_wgmma_commit();\n";
  }

  // Step i's B tile, this thread's weight pieces from its own slots, and their scales.
  std::string step_reads() const {
    std::string s = fmt::format("    const unsigned tile = b_tiles + (unsigned)(i & 1) * {}u;\n", x_step_);
    s += fmt::format("    uint4 w[{}][2];  // this step's pieces, from this thread's own slots\n", frags_);
    s += fmt::format("#pragma unroll\n    for (int f = 0; f < {}; ++f)\n#pragma unroll\n      for (int r = 0; r < 2; ++r)\n",
                     frags_);
    s += fmt::format("        w[f][r] = *reinterpret_cast<const uint4*>(smem_bytes + (w_ring - smem) + (i % {}) * {}u + "
                     "((f * 2 + r) * {} + tid) * 16u);\n",
                     c_.stages, w_slot_, threads_);
    return s + word_reads();
  }

  // dequant_mma's product kk of a step: each fragment's A registers dequantised once (as
  // product_code's), B's registers of every n8 tile by ldmatrix, then a product for each
  // (fragment, tile) pair.
  std::string mma_product_code(int kk) const {
    const int q = i4_ ? kk / 2 : kk, first = i4_ ? 2 * (kk % 2) : 0;
    std::string s = fmt::format("    {{  // product {} of the step: word {} of each piece, pairs {} and {}\n", kk, q,
                                first, first + 1);
    s += fmt::format("      unsigned a[{}][4];\n", frags_);
    s += fmt::format("#pragma unroll\n      for (int f = 0; f < {}; ++f) {{\n", frags_);
    for (int reg = 0; reg < 4; ++reg) {
      const int r = reg & 1, pair = first + (reg >> 1);
      s += fmt::format("        a[f][{}] = {};\n", reg, pair_code(fmt::format("w[f][{}].{}", r, kWords[q]), pair, "f", r));
    }
    s += "      }\n";
    // Chunks 2 kk and 2 kk + 1 of every row: in the 128-byte row block kk / 4, at chunk
    // (2 kk) % 8 of the row, XOR the lane's swizzle.
    s += fmt::format("      const unsigned b_at = tile + {}u + b_lane + ((b_swizzle ^ {}u) << 4);\n",
                     (kk / 4) * c_.bm * 128, (2 * kk) % 8);
    s += fmt::format("      unsigned b[{}][4];  // tiles 2 p and 2 p + 1: chunk 2 kk, then 2 kk + 1\n", (tiles_ + 1) / 2);
    for (int j = 0; j < tiles_; j += 2) {
      if (j + 1 < tiles_) s += fmt::format("      kiln_ldmatrix_x4(b[{}], b_at + {}u);\n", j / 2, j * 1024);
      else s += fmt::format("      kiln_ldmatrix_x2(b[{}][0], b[{}][1], b_at + {}u);\n", j / 2, j / 2, j * 1024);
    }
    s += fmt::format("#pragma unroll\n      for (int f = 0; f < {}; ++f)\n#pragma unroll\n        for (int j = 0; j < {}; ++j)\n",
                     frags_, tiles_);
    s += fmt::format("          kiln_mma_{}(acc[f][j], a[f], b[j >> 1][(j & 1) * 2], b[j >> 1][(j & 1) * 2 + 1]);\n", type());
    return s + "    }\n";
  }

  // Before the loop: the ring filled `ahead_` steps deep, step 0's B tile written.
  std::string ring_fill() const {
    std::string s = fmt::format("  // Fill the ring {} steps deep.\n", ahead_);
    s += fmt::format("#pragma unroll 1\n  for (int i = 0; i < {}; ++i) copy_step(i);\n", ahead_);
    s += fmt::format("  kiln_copy_async_wait_group<{}>();  // step 0 has landed\n", ahead_ - 1);
    return s + "  __syncthreads();\n  permute_step(0, b_tiles);\n";
  }

  // A step's start: its copies and every thread's in, the copies `ahead_` steps on issued,
  // then its reads.
  std::string step_start(const std::string& barrier) const {
    std::string s = "#pragma unroll 1\n  for (int i = 0; i < steps; ++i) {\n";
    s += fmt::format("    kiln_copy_async_wait_group<{}>();  // this thread's copies of step i + 1 have landed\n",
                     ahead_ - 2);
    s += "    __syncthreads();  // " + barrier + "\n";
    s += fmt::format("    copy_step(i + {});  // into the slot that step i - 1 used\n", ahead_);
    return s + step_reads();
  }

  // dequant_mma's loop: main_loop's steps with synchronous products, so one barrier a step.
  std::string mma_main_loop() const {
    std::string s = ring_fill();
    s += "  // ldmatrix's rows: lanes 8 q .. 8 q + 7 address matrix q, row lane % 8 of n8 tile 2 p + q / 2 at\n";
    s += "  // chunk 2 kk + q % 2, whose 16 bytes sit at chunk (chunk ^ row) % 8 of the row's 128.\n";
    s += "  const unsigned b_lane = (unsigned)(((lane >> 4) * 8 + (lane & 7)) * 128);\n";
    s += "  const unsigned b_swizzle = (unsigned)(((lane >> 3) & 1) ^ (lane & 7));\n";
    s += step_start("every thread's; step i's B tile is written, step i - 1's read by every warp");
    for (int kk = 0; kk < products_; ++kk) s += mma_product_code(kk);
    s += fmt::format("    if (i + 1 < steps) permute_step(i + 1, b_tiles + (unsigned)((i + 1) & 1) * {}u);\n", x_step_);
    return s + "  }\n";
  }

  // The first of this thread's weight rows in fragment f (code, before g and 8 r).
  std::string fragment_row() const {
    if (mma_) return fmt::format("warp * {} + f * 16", 16 * frags_);
    return fmt::format("warpgroup * {} + f * 64 + warp * 16", 64 * frags_);
  }

  // Accumulator e of fragment f (e = 4 j + i: n8 tile j, register i).
  std::string acc_at() const { return mma_ ? "acc[f][e >> 2][e & 3]" : "acc[f][e]"; }

  std::string main_loop() const {
    std::string s = ring_fill();
    s += fmt::format("  unsigned a[4][{}][4];  // four sets of A fragments, taken in turn\n", frags_);
    s += step_start("every thread's: and step i's B tile is written");
    for (int kk = 0; kk < products_; ++kk) s += product_code(kk);
    s += "    // This warpgroup's products of step i - 1 have finished (the waits above leave step i's\n";
    s += "    // in flight): their B tile takes step i + 1.\n";
    // A warpgroup's waits cover its own products only: another's of step i - 1 may still
    // read that tile until they meet.
    if (warpgroups_ > 1) s += "    __syncthreads();  // every warpgroup's products of step i - 1 have finished\n";
    s += fmt::format("    if (i + 1 < steps) permute_step(i + 1, b_tiles + (unsigned)((i + 1) & 1) * {}u);\n", x_step_);
    s += "  }\n";
    s += "  kiln_wgmma_wait<0>();\n";
    return s;
  }

  // Thread (g, t) of warp w holds, in fragment f, weight rows 16 w + g (+ 8) and
  // activation rows 8 j + 2 t (+ 1): acc[f][4 j + e], e = 2 * (row + 8) + (row + 1).
  std::string element_loop(const std::string& body) const {
    std::string s = fmt::format("#pragma unroll\n  for (int f = 0; f < {}; ++f)\n#pragma unroll\n    for (int e = 0; e < {}; ++e) {{\n",
                                frags_, c_.bm / 2);
    s += fmt::format("      const int n = n0 + {} + g + ((e & 2) ? 8 : 0);\n", fragment_row());
    s += "      const int m = (e >> 2) * 8 + 2 * t + (e & 1);\n";
    return s + body + "    }\n";
  }

  std::string epilogue() const {
    std::string s = "  // The epilogue on each accumulator: output row m (an activation row), column n (a weight row).\n";
    s += element_loop("      const float values[1] = {" + acc_at() + "};\n      " + epilogue_.call("m", "n", "values"));
    return s;
  }

  std::string split_epilogue() const {
    const int64_t matrix = g_.m * g_.n;
    std::string s = "  // This slice's partial sums, then the column tile's ticket.\n";
    s += fmt::format("  float* const partials = {} + (long long)blockIdx.y * {}ll;\n", name("partials"), matrix);
    s += element_loop(fmt::format("      if (m < {} && n < {}) partials[(long long)m * {} + n] = {};\n", g_.m, g_.n,
                                  g_.n, acc_at()));
    s += "  __shared__ int last_slice;\n  __syncthreads();  // the partials are written before the ticket is taken\n";
    s += "  if (tid == 0) {\n";
    s += fmt::format("    last_slice = kiln_take_ticket(&{}[blockIdx.x]) == {}u;\n", name("tickets"), c_.split_k - 1);
    s += fmt::format("    if (last_slice) {}[blockIdx.x] = 0;  // the next launch starts from zero\n", name("tickets"));
    s += "  }\n  __syncthreads();\n  if (!last_slice) return;\n";
    // The last slice sums every slice's partials in slice order (the same bits every run),
    // by items of the tile that the block's threads take in turn (four columns an item where
    // rows of N are whole float4s), the loads of `batch` items and every slice issued before
    // any sum: one element at a time, each waited a round trip to L2.
    const int vec = g_.n % 4 == 0 ? 4 : 1, batch = 4;
    const int64_t per_row = c_.bn / vec, items = g_.m * per_row;
    s += "  // The last slice: every slice's partials in slice order, several items' loads in flight.\n";
    s += fmt::format("  for (int base = tid; base < {}; base += {}) {{\n", items, int64_t{threads_} * batch);
    s += fmt::format("    float sum[{}][{}];\n", batch, vec);
    s += fmt::format("#pragma unroll\n    for (int b = 0; b < {}; ++b)\n#pragma unroll\n      for (int e = 0; e < {}; ++e) "
                     "sum[b][e] = 0.0f;\n",
                     batch, vec);
    auto item_at = [&](const std::string& in) {
      return fmt::format("{}const int item = base + b * {}, m = item / {}, n = n0 + item % {} * {};\n", in, threads_,
                         per_row, per_row, vec);
    };
    s += fmt::format("#pragma unroll\n    for (int z = 0; z < {}; ++z)\n#pragma unroll\n      for (int b = 0; b < {}; ++b) {{\n",
                     c_.split_k, batch);
    s += item_at("        ");
    s += fmt::format("        if (item < {} && n < {}) {{\n", items, g_.n);
    const std::string at = fmt::format("{} + (long long)z * {}ll + (long long)m * {} + n", name("partials"), matrix, g_.n);
    if (vec == 4) {
      s += fmt::format("          const float4 p = __ldcg(reinterpret_cast<const float4*>({}));\n", at);
      s += "          sum[b][0] += p.x; sum[b][1] += p.y; sum[b][2] += p.z; sum[b][3] += p.w;\n";
    } else {
      s += fmt::format("          sum[b][0] += __ldcg({});\n", at);
    }
    s += "        }\n      }\n";
    s += fmt::format("#pragma unroll\n    for (int b = 0; b < {}; ++b) {{\n", batch);
    s += item_at("      ");
    s += fmt::format("      if (item < {}) {{\n#pragma unroll\n        for (int e = 0; e < {}; ++e) {{\n", items, vec);
    s += "          const float values[1] = {sum[b][e]};\n          " + epilogue_.call("m", "n + e", "values");
    s += "        }\n      }\n    }\n  }\n";
    return s;
  }

  const ir::Kernel& k_;
  const ir::TileConfig& c_;
  const ir::GemmCore& g_;
  std::vector<std::string> params_;
  GemmEpilogue epilogue_;
  bool i4_ = true, bf16_ = false, split_ = false, zero_ = false, integer_zero_ = true, packed_ = true;
  bool mma_ = false;  // dequant_mma: mma.sync products, each warp its own m16 fragments
  int warpgroups_ = 1, threads_ = 128, frags_ = 1, tiles_ = 1, products_ = 8, pieces_ = 16, ahead_ = 2, words_ = 1;
  int64_t x_step_ = 0, w_slot_ = 0, slice_ = 0, col_tiles_ = 0;
  DType scale_dtype_ = DType::f16;
};

}  // namespace

LaunchDims gemm_dequant_wgmma_launch_dims(const ir::Kernel& k) {
  const ir::TileConfig& c = k.config;
  LaunchDims d;
  d.grid[0] = static_cast<unsigned>(ceil_div(k.gemm.n, c.bn));
  d.grid[1] = static_cast<unsigned>(std::max(1, c.split_k));
  d.block[0] = static_cast<unsigned>(32 * c.warps_n);
  d.shared_bytes = static_cast<unsigned>(ir::dequant_wgmma_shared_bytes(k, c));
  d.blocks_per_sm = static_cast<unsigned>(ir::dequant_blocks_per_sm(k, c));
  return d;
}

std::string emit_gemm_dequant_wgmma(const ir::Kernel& k) { return DequantWgmmaEmitter(k).emit(); }

}  // namespace kiln::codegen
