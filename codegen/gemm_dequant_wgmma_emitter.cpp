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
    warpgroups_ = c_.warps_n / 4;
    threads_ = 32 * c_.warps_n;
    pieces_per_thread_ = 4 * c_.bn / threads_;
    products_ = c_.bk / 16;
    pieces_ = c_.bk / 8;  // 16-byte pieces of an activation row a step
    x_step_ = int64_t{c_.bm} * c_.bk * 2;
    a_tile_ = int64_t{64} * c_.bk * 2;
    w_tile_ = int64_t{c_.bn} * c_.bk * 2;
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
    w_slot_ = int64_t{c_.bn} * 64 + int64_t{zero_ ? 2 : 1} * 4 * c_.bn * 4;
  }

  std::string emit() const {
    std::string s = header();
    if (split_) s += scratch();
    s += epilogue_.functions() + product_function() + pack_function() + signature() + setup() + lambdas() +
         main_loop() + sum_warpgroups() + (split_ ? split_epilogue() : epilogue());
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
    s += fmt::format("// Config {}:\n//   grid {} x {} blocks of {} threads ({} warpgroup{}), {} bytes of shared memory\n",
                     c_.str(), d.grid[0], d.grid[1], d.block[0], warpgroups_, warpgroups_ == 1 ? "" : "s",
                     d.shared_bytes);
    s += fmt::format("//   schedule dequant_wgmma: wgmma m64n{}k16, A the {} activation rows (of 64) and B {} weight rows "
                     "dequantised into shared memory{}\n",
                     c_.bn, g_.m, c_.bn,
                     warpgroups_ > 1 ? "; the warpgroups take alternate k16 products and add their sums at the end" : "");
    s += fmt::format("//   B %{}: {} weights [N, K], (w - z) * s with scales %{}{} per {} elements of K, {}\n",
                     k_.args[static_cast<size_t>(g_.b.arg)].name, i4_ ? "i4" : "i8",
                     k_.args[static_cast<size_t>(dq.scale)].name,
                     zero_ ? fmt::format(" and zero points %{}", k_.args[static_cast<size_t>(dq.zero)].name) : "",
                     dq.group, packed_ ? "packed-pair math" : "fp32 math rounded to the operand dtype");
    s += fmt::format("//   K in steps of {} through a ring of {} steps ({} ahead): each thread's own 16-byte weight "
                     "pieces with the 4-byte words of their scales{}, and the activations' step; the block turns "
                     "the next step into its A and B tiles while the products of this one run\n",
                     c_.bk, c_.stages, ahead_, zero_ ? " and zero points" : "");
    if (split_)
      s += fmt::format("//   K in {} slices of {}; each column tile's last slice sums the fp32 partials in slice order\n",
                       c_.split_k, slice_);
    s += "//   epilogue: " + epilogue_.describe() + ", one element a call\n";
    return s;
  }

  std::string scratch() const {
    return fmt::format("__device__ float {}[{}];\n__device__ int {}[{}];\n", name("partials"),
                       int64_t{c_.split_k} * g_.m * g_.n, name("tickets"), col_tiles_);
  }

  // acc += A B over 16 of K: the activations' 64 rows against bn weight rows, both K-major
  // in shared memory.
  std::string product_function() const {
    const int regs = c_.bn / 2;
    std::vector<std::string> dregs, outs;
    for (int i = 0; i < regs; ++i) {
      dregs.push_back(fmt::format("%{}", i));
      outs.push_back(fmt::format("\"+f\"(acc[{}])", i));
    }
    std::string s = fmt::format(
        "// acc += A B over 16 of K: 64 activation rows against {} dequantised weight rows, both K-major.\n", c_.bn);
    s += fmt::format("static __device__ __forceinline__ void {}(float (&acc)[{}], unsigned long long a, "
                     "unsigned long long b) {{\n",
                     name("product"), regs);
    s += fmt::format("  asm volatile(\"{{ .reg .pred p; setp.ne.b32 p, %{}, 0;\\n\"\n", regs + 2);
    s += fmt::format("               \"wgmma.mma_async.sync.aligned.m64n{}k16.f32.{}.{} {{{}}}, %{}, %{}, p, 1, 1, 0, 0;"
                     "\\n}}\"\n",
                     c_.bn, type(), type(), fmt::join(dregs, ", "), regs, regs + 1);
    s += fmt::format("               : {}\n", fmt::join(outs, ", "));
    s += "               : \"l\"(a), \"l\"(b), \"n\"(1) : \"memory\");\n}\n";
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
    return fmt::format("extern \"C\" __global__ void __launch_bounds__({}, 1) {}({}) {{\n", threads_, k_.name,
                       fmt::join(gemm_pointer_params(k_, params_), ", "));
  }

  int64_t row_bytes() const { return i4_ ? g_.k / 2 : g_.k; }
  int64_t groups() const { return g_.k / g_.b.dequant.group; }

  std::string setup() const {
    std::string s = "  extern __shared__ __align__(1024) unsigned char kiln_smem[];\n";
    s += "  // Two A tiles and two B tiles first (1024-byte aligned: the 128-byte swizzle repeats every 8\n";
    s += "  // rows), then the activations' ring, then the weights' ring.\n";
    s += "  const unsigned smem = ((unsigned)__cvta_generic_to_shared(kiln_smem) + 1023u) & ~1023u;\n";
    s += fmt::format("  const unsigned a_tiles = smem, b_tiles = smem + {}u;\n", 2 * a_tile_);
    s += fmt::format("  const unsigned x_ring = b_tiles + {}u, w_ring = x_ring + {}u;\n", 2 * w_tile_,
                     c_.stages * x_step_);
    s += "  unsigned char* const smem_bytes = kiln_smem + (smem - (unsigned)__cvta_generic_to_shared(kiln_smem));\n";
    s += "  const int tid = (int)threadIdx.x, lane = tid & 31, warp = (tid >> 5) & 3, warpgroup = tid >> 7;\n";
    s += "  const int g = lane >> 2, t = lane & 3;  // fragment row; the piece of a weight row this thread copies\n";
    s += fmt::format("  const int n0 = (int)blockIdx.x * {};\n", c_.bn);
    s += "  [[maybe_unused]] const unsigned batch = 0;\n";
    if (split_) {
      s += fmt::format("  const int k_begin = (int)blockIdx.y * {};\n", slice_);
      s += fmt::format("  const int steps = min({}, {} - k_begin) / {};\n", slice_, g_.k, c_.bk);
    } else {
      s += fmt::format("  constexpr int k_begin = 0, steps = {};\n", g_.k / c_.bk);
    }
    s += fmt::format("  // This thread's pieces: piece t of weight rows tid / 4 + {} j (clamped to the last row:\n"
                     "  // rows past N are computed and dropped).\n",
                     threads_ / 4);
    s += fmt::format("  const unsigned char* w_src[{0}];\n  long long s_row[{0}];\n  bool w_in[{0}];\n", pieces_per_thread_);
    s += fmt::format("#pragma unroll\n  for (int j = 0; j < {}; ++j) {{\n", pieces_per_thread_);
    s += fmt::format("    const int row = n0 + (tid >> 2) + {} * j;\n", threads_ / 4);
    s += fmt::format("    w_in[j] = row < {};\n", g_.n);
    s += fmt::format("    const long long clamped = (long long)min(row, {});\n", g_.n - 1);
    s += fmt::format("    w_src[j] = reinterpret_cast<const unsigned char*>({}) + clamped * {}ll + k_begin / {} + t * 16;\n",
                     param(g_.b.arg), row_bytes(), i4_ ? 2 : 1);
    s += fmt::format("    s_row[j] = clamped * {}ll;\n", groups());
    s += "  }\n";
    if (c_.bm < 64) {
      s += fmt::format("  // The A tiles' rows past the {} loaded stay zero.\n", c_.bm);
      s += fmt::format("  for (int v = tid; v < {}; v += {}) *reinterpret_cast<uint4*>(smem_bytes + v * 16) = "
                       "make_uint4(0u, 0u, 0u, 0u);\n",
                       2 * a_tile_ / 16, threads_);
    }
    s += fmt::format("  float acc[{}];\n#pragma unroll\n  for (int e = 0; e < {}; ++e) acc[e] = 0.0f;\n", c_.bn / 2,
                     c_.bn / 2);
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

  // The ring slot's word w (0: scale, 1: zero point) of this thread's piece j.
  std::string word_at(const std::string& slot, int w) const {
    return fmt::format("w_ring + {} * {}u + {}u + (({} * {} + j) * {} + tid) * 4u", slot, w_slot_,
                       int64_t{c_.bn} * 64, w, pieces_per_thread_, threads_);
  }

  // The copies of the 4-byte words that hold each piece's scale (and zero point): the
  // aligned word around the element, no byte past the argument's end.
  std::string word_copies() const {
    const ir::GemmDequant& dq = g_.b.dequant;
    std::string s = "      const unsigned group = " + group_code("k0") + ";\n";
    s += fmt::format("#pragma unroll\n      for (int j = 0; j < {}; ++j) {{\n", pieces_per_thread_);
    s += "          const long long at = s_row[j] + group;\n";
    int w = 0;
    for (int arg : {dq.scale, dq.zero}) {
      if (arg < 0) continue;
      s += fmt::format("          {{\n            const long long from = {} & ~3ll;\n", byte_of(arg, "at"));
      s += fmt::format("            kiln_copy_async4_zfill({}, reinterpret_cast<const unsigned char*>({}) + from, "
                       "(unsigned)min(4ll, {}ll - from));\n          }}\n",
                       word_at("slot", w++), param(arg), total_bytes(arg));
    }
    return s + "      }\n";
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
    s += fmt::format("    const unsigned slot = (unsigned)(i % {});\n", c_.stages);
    s += fmt::format("    unsigned scale2[{}]{};\n", pieces_per_thread_,
                     zero_travels() ? fmt::format(", zero2[{}]", pieces_per_thread_) : "");
    s += fmt::format("#pragma unroll\n    for (int j = 0; j < {}; ++j) {{\n", pieces_per_thread_);
    s += "        const long long at = s_row[j] + group;\n";
    const std::string read = "*reinterpret_cast<const unsigned*>(smem_bytes + ({} - smem))";
    s += "        const unsigned sw = " + fmt::format(fmt::runtime(read), word_at("slot", 0)) + ";\n";
    if (dtype_bytes(scale_dtype_) == 2) {
      s += "        const unsigned s_bits = (sw >> ((unsigned)(at & 1) * 16u)) & 0xffffu;\n";
      s += std::string("        scale2[j] = ") +
           (packed_ ? "s_bits * 0x10001u" : float_bits(scale_dtype_, "s_bits")) + ";\n";
    } else {
      s += "        scale2[j] = sw;\n";
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
        s += "        zero2[j] = " +
             (bf16_ ? fmt::format("kiln_bf16_pair({}, {})", total, total) : fmt::format("kiln_pair_f16({})", total)) +
             ";\n";
      } else {
        s += fmt::format("        zero2[j] = __float_as_uint({});\n", z);
      }
    } else if (zero_travels()) {
      s += "        zero2[j] = 0u;  // +0.0f\n";
    }
    return s + "      }\n";
  }

  // Whether the zero (bias) of a piece travels with its scale, or is one literal pair.
  bool zero_travels() const { return zero_ || !packed_; }
  std::string offset_literal() const {
    return i4_ ? (bf16_ ? "0x43084308u" : "0x64086408u") : "0x64806480u";
  }

  // The kernel's steps as lambdas: the copies of a step, and the turning of a step's copies
  // into the A tile (the activations, permuted) and the B tile (the weight, dequantised).
  std::string lambdas() const {
    std::string s;
    s += "  // The copies of step i into ring slot i % stages (none past the slice), closed as one group.\n";
    s += "  const auto copy_step = [&](int i) {\n";
    s += "    if (i < steps) {\n";
    s += fmt::format("      const int slot = i % {};\n", c_.stages);
    s += fmt::format("#pragma unroll\n      for (int j = 0; j < {}; ++j)\n", pieces_per_thread_);
    s += fmt::format("        kiln_copy_async16_zfill(w_ring + slot * {}u + (j * {} + tid) * 16u, w_src[j] + "
                     "(long long)i * 64, w_in[j] ? 16u : 0u);\n",
                     w_slot_, threads_);
    s += fmt::format("      const int k0 = k_begin + i * {};\n", c_.bk);
    s += word_copies();
    s += fmt::format("      for (int it = tid; it < {}; it += {}) {{\n", c_.bm * pieces_, threads_);
    s += fmt::format("        const int m = it / {}, p = it % {};\n", pieces_, pieces_);
    s += fmt::format("        const bool in = m < {};\n", g_.m);
    s += fmt::format("        kiln_copy_async16_zfill(x_ring + slot * {}u + (m * {} + (p ^ (m & 7))) * 16u, {} + "
                     "(long long)(in ? m : 0) * {}ll + k0 + 8 * p, in ? 16u : 0u);\n",
                     x_step_, pieces_, param(g_.a.arg), g_.k);
    s += "      }\n    }\n    kiln_copy_async_commit();\n  };\n";
    s += "  // The activations of step i (ring slot i % stages) as the A tile `tile`: piece p of row m\n";
    s += "  // (elements 8p .. 8p + 7 of the step) is piece q of thread column t's weight span, and its four\n";
    s += "  // pairs go to chunks 4q + c (word t) of the row, where the weights' pairs meet them.\n";
    s += "  const auto permute_step = [&](int i, unsigned tile) {\n";
    s += fmt::format("    const unsigned char* const from = smem_bytes + (x_ring - smem) + (i % {}) * {}u;\n", c_.stages,
                     x_step_);
    s += "    const int r = lane & 7, tt = lane >> 3;  // a warp: 8 rows x the 4 thread columns\n";
    s += fmt::format("    for (int it = tid >> 5; it < {}; it += {}) {{\n", c_.bm / 8 * (pieces_ / 4), threads_ / 32);
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
                     64 * 128);
    s += "      }\n    }\n";
    s += "  };\n";
    s += "  // Step i's tiles: the activations permuted into A tile i % 2, and this thread's weight pieces\n";
    s += "  // dequantised into B tile i % 2: pair c of word q of a piece goes to the K chunk where the\n";
    s += "  // activations' pair meets it (i4: 4q + c; i8: 2q + c), at the piece's word t of the chunk.\n";
    s += "  const auto tiles_of_step = [&](int i) {\n";
    s += fmt::format("    permute_step(i, a_tiles + (unsigned)(i & 1) * {}u);\n", a_tile_);
    s += fmt::format("    unsigned char* const b_tile = smem_bytes + {}u + (unsigned)(i & 1) * {}u;\n", 2 * a_tile_, w_tile_);
    s += word_reads();
    s += fmt::format("#pragma unroll\n    for (int j = 0; j < {}; ++j) {{\n", pieces_per_thread_);
    s += fmt::format("      const int row = (tid >> 2) + {} * j;\n", threads_ / 4);
    s += fmt::format("      const uint4 w = *reinterpret_cast<const uint4*>(smem_bytes + (w_ring - smem) + slot * {}u + "
                     "(j * {} + tid) * 16u);\n",
                     w_slot_, threads_);
    s += fmt::format("      unsigned char* const b_row = b_tile + row * 128 + t * 4;\n");
    for (int q = 0; q < 4; ++q)
      for (int c = 0; c < (i4_ ? 4 : 2); ++c) {
        const int chunk = i4_ ? 4 * q + c : 2 * q + c;
        s += fmt::format("      *reinterpret_cast<unsigned*>(b_row + {}u + ((({} ^ row) & 7) << 4)) = {};\n",
                         (chunk >> 3) * c_.bn * 128, chunk & 7, pair_code(fmt::format("w.{}", kWords[q]), c, "j"));
      }
    s += "    }\n";
    s += "    asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");  // visible to wgmma's reads\n";
    s += "  };\n";
    return s;
  }

  // The dequantised pair i (i4: nibbles (i, i + 4) of `word`; i8: bytes (i, i + 2)) of
  // piece j with its scale and zero.
  std::string pair_code(const std::string& word, int i, const std::string& j) const {
    const std::string sc = fmt::format("scale2[{}]", j);
    const std::string zr = zero_travels() ? fmt::format("zero2[{}]", j) : offset_literal();
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

  std::string main_loop() const {
    std::string s;
    s += fmt::format("  // Fill the ring {} steps deep; then step 0's tiles.\n", ahead_);
    s += fmt::format("#pragma unroll 1\n  for (int i = 0; i < {}; ++i) copy_step(i);\n", ahead_);
    s += fmt::format("  kiln_copy_async_wait_group<{}>();  // step 0 has landed\n", ahead_ - 1);
    s += "  __syncthreads();\n";
    s += "  tiles_of_step(0);\n";
    s += "#pragma unroll 1\n  for (int i = 0; i < steps; ++i) {\n";
    s += fmt::format("    kiln_copy_async_wait_group<{}>();  // this thread's copies of step i + 1 have landed\n",
                     ahead_ - 2);
    s += "    __syncthreads();  // every thread's, and step i's tiles are written\n";
    s += fmt::format("    copy_step(i + {});  // into the slot that step i - 1 used\n", ahead_);
    s += fmt::format("    const unsigned a_tile = a_tiles + (unsigned)(i & 1) * {}u, b_tile = b_tiles + (unsigned)(i & 1) * "
                     "{}u;\n",
                     a_tile_, w_tile_);
    s += "    kiln_wgmma_fence();\n";
    // A count of products known at compile time: a loop whose bounds vary by warpgroup reads
    // to ptxas as a divergent path, and it serialises the products.
    s += fmt::format("#pragma unroll\n    for (int h = 0; h < {}; ++h) {{\n", products_ / warpgroups_);
    s += warpgroups_ > 1 ? fmt::format("      const int kk = h * {} + warpgroup;  // this warpgroup's products\n", warpgroups_)
                         : "      const int kk = h;\n";
    s += fmt::format("      {}(acc, kiln_wgmma_desc(a_tile + (kk >> 2) * {}u + (kk & 3) * 32u, 16u, 1024u),\n", name("product"),
                     64 * 128);
    s += fmt::format("          kiln_wgmma_desc(b_tile + (kk >> 2) * {}u + (kk & 3) * 32u, 16u, 1024u));\n",
                     c_.bn * 128);
    s += "    }\n    kiln_wgmma_commit();\n";
    s += "    kiln_wgmma_wait<1>();  // step i - 1's products have finished: their tiles take step i + 1\n";
    s += "    if (i + 1 < steps) tiles_of_step(i + 1);\n";
    s += "  }\n";
    s += "  kiln_wgmma_wait<0>();\n";
    return s;
  }

  // With two warpgroups, the second adds its sums into the first's through shared memory
  // (the rings are free now), register by register so that a warp's stores are contiguous.
  std::string sum_warpgroups() const {
    if (warpgroups_ == 1) return "";
    std::string s = "  // The second warpgroup's sums (its k16 products) join the first's.\n";
    s += "  __syncthreads();\n";
    s += "  float* const sums = reinterpret_cast<float*>(smem_bytes + (x_ring - smem));\n";
    s += fmt::format("  if (warpgroup == 1)\n#pragma unroll\n    for (int e = 0; e < {}; ++e) sums[e * 128 + tid - 128] = acc[e];\n",
                     c_.bn / 2);
    s += "  __syncthreads();\n";
    s += fmt::format("  if (warpgroup == 0)\n#pragma unroll\n    for (int e = 0; e < {}; ++e) acc[e] += sums[e * 128 + tid];\n",
                     c_.bn / 2);
    return s;
  }

  // Thread (g, t) of warp w holds output rows (activation rows) 16 w + g (+ 8) and columns
  // (weight rows) 8 j + 2 t (+ 1): acc[4 j + e], e = 2 * (row + 8) + (column + 1).
  std::string element_loop(const std::string& body) const {
    std::string s = fmt::format("  if (warpgroup == 0)\n#pragma unroll\n    for (int e = 0; e < {}; ++e) {{\n", c_.bn / 2);
    s += "      const int m = warp * 16 + g + ((e & 2) ? 8 : 0);\n";
    s += "      const int n = n0 + (e >> 2) * 8 + 2 * t + (e & 1);\n";
    return s + body + "    }\n";
  }

  std::string epilogue() const {
    std::string s = "  // The epilogue on each accumulator of the first warpgroup.\n";
    s += element_loop("      const float values[1] = {acc[e]};\n      " + epilogue_.call("m", "n", "values"));
    return s;
  }

  std::string split_epilogue() const {
    const int64_t matrix = g_.m * g_.n;
    std::string s = "  // This slice's partial sums, then the column tile's ticket.\n";
    s += fmt::format("  float* const partials = {} + (long long)blockIdx.y * {}ll;\n", name("partials"), matrix);
    s += element_loop(fmt::format("      if (m < {} && n < {}) partials[(long long)m * {} + n] = acc[e];\n", g_.m, g_.n,
                                  g_.n));
    s += "  __threadfence();  // the partials are visible before the ticket is taken\n";
    s += "  __shared__ int last_slice;\n  __syncthreads();\n";
    s += "  if (tid == 0) {\n";
    s += fmt::format("    last_slice = atomicAdd(&{}[blockIdx.x], 1) == {};\n", name("tickets"), c_.split_k - 1);
    s += fmt::format("    if (last_slice) {}[blockIdx.x] = 0;  // the next launch starts from zero\n", name("tickets"));
    s += "  }\n  __syncthreads();\n  if (!last_slice) return;\n  __threadfence();\n";
    s += "  // The last slice: every slice's partials in slice order (the same bits every run); the\n";
    s += "  // slices' loads of an element issue together.\n";
    s += element_loop(fmt::format("      float sum = 0.0f;\n      if (m < {} && n < {})\n#pragma unroll\n"
                                  "        for (int z = 0; z < {}; ++z) sum += __ldcg({} + (long long)z * {}ll + "
                                  "(long long)m * {} + n);\n"
                                  "      const float values[1] = {{sum}};\n      {}",
                                  g_.m, g_.n, c_.split_k, name("partials"), matrix, g_.n,
                                  epilogue_.call("m", "n", "values")));
    return s;
  }

  const ir::Kernel& k_;
  const ir::TileConfig& c_;
  const ir::GemmCore& g_;
  std::vector<std::string> params_;
  GemmEpilogue epilogue_;
  bool i4_ = true, bf16_ = false, split_ = false, zero_ = false, integer_zero_ = true, packed_ = true;
  int warpgroups_ = 1, threads_ = 128, pieces_per_thread_ = 1, products_ = 8, pieces_ = 16, ahead_ = 2;
  int64_t x_step_ = 0, a_tile_ = 0, w_tile_ = 0, w_slot_ = 0, slice_ = 0, col_tiles_ = 0;
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
  return d;
}

std::string emit_gemm_dequant_wgmma(const ir::Kernel& k) { return DequantWgmmaEmitter(k).emit(); }

}  // namespace kiln::codegen
