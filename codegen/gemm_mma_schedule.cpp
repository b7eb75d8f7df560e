// The mma_sync schedule: operands staged through swizzled shared memory (cp.async or
// registers, gemm_operand_load.h), products on Tensor Cores (gemm_mma_stage.h). After
// the main loop each warp writes its accumulators, 16 rows at a time, into a strip of
// shared memory and reads them back as rows of 8 consecutive columns, so that the
// epilogue reads and writes whole vectors.
#include <fmt/format.h>

#include "codegen/gemm_mma_stage.h"
#include "codegen/gemm_operand_load.h"
#include "codegen/gemm_schedule.h"

namespace kiln::codegen {

namespace {

constexpr int kVec = 8;     // columns per epilogue call: 16 bytes of f16 output
constexpr int kStripPad = 4;  // floats past each strip row: the read-back's rows fall in distinct banks

class MmaSchedule : public GemmSchedule {
public:
  MmaSchedule(const ir::Kernel& k, const std::vector<std::string>& params)
      : k_(k), c_(k.config),
        a_(k, true, params.at(static_cast<size_t>(k.gemm.a.arg)), c_.bm, c_.bk, 32 * c_.warps_m * c_.warps_n),
        b_(k, false, params.at(static_cast<size_t>(k.gemm.b.arg)), c_.bn, c_.bk, 32 * c_.warps_m * c_.warps_n),
        math_(k, a_, b_) {
    b_.place_packed(int64_t{c_.stages} * stage_bytes());
  }

  std::string describe() const override {
    return fmt::format("//   {} warps ({} x {}), each {} x {} of the tile as {} x {} {} fragments\n//   {}\n//   {}\n",
                       c_.warps_m * c_.warps_n, c_.warps_m, c_.warps_n, math_.warp_rows(), math_.warp_cols(),
                       math_.frag_rows(), math_.frag_cols(), math_.describe(), a_.describe(), b_.describe());
  }
  int threads() const override { return 32 * c_.warps_m * c_.warps_n; }
  int stage_bytes() const override { return a_.tile().bytes() + b_.stage_bytes(); }
  int stages() const override { return c_.stages; }
  bool async_copies() const override { return a_.async() || b_.async(); }

  std::string setup() const override {
    std::string s = "  const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;\n";
    s += fmt::format("  const int warp_m = warp / {}, warp_n = warp % {};\n", c_.warps_n, c_.warps_n);
    s += a_.setup("m0") + b_.setup("n0") + math_.setup();
    return s;
  }

  std::string accumulators() const override {
    return fmt::format("  float acc[{}][{}][4];\n#pragma unroll\n  for (int mi = 0; mi < {}; ++mi)\n#pragma unroll\n"
                       "    for (int ni = 0; ni < {}; ++ni)\n#pragma unroll\n      for (int r = 0; r < 4; ++r) "
                       "acc[mi][ni][r] = 0.0f;\n",
                       math_.frag_rows(), math_.frag_cols(), math_.frag_rows(), math_.frag_cols());
  }

  std::string issue(const std::string& in, const std::string& stage, const std::string& k0) const override {
    return a_.issue(in, stage, k0) + b_.issue(in, b_stage(stage), k0);
  }
  std::string commit(const std::string& in, const std::string& stage, const std::string& k0) const override {
    return a_.commit(in, stage, k0) + b_.commit(in, b_stage(stage), k0);
  }
  std::string preload() const override { return b_.packed() ? b_.packed_preload() : ""; }
  std::string prepare(const std::string& in, const std::string& stage, const std::string& k0,
                      bool ahead) const override {
    return b_.packed() ? b_.packed_prepare(in, b_stage(stage), k0, ahead ? "(b_parity ^ 1)" : "b_parity") : "";
  }
  std::string advance(const std::string& in) const override {
    return b_.packed() ? in + "b_parity ^= 1;  // the dequantised tile the fragments read\n" : "";
  }
  int k_steps() const override { return math_.k_steps(); }
  std::string fragments() const override { return math_.fragments(); }
  std::string load_fragments(const std::string& in, const std::string& buf, const std::string& stage,
                             const std::string& kk) const override {
    return math_.load(in, buf, stage, b_.packed() ? b_.packed_tile("b_parity") : b_stage(stage), kk);
  }
  std::string multiply(const std::string& in, const std::string& buf) const override {
    return math_.multiply(in, buf);
  }
  int vec() const override { return kVec; }

  std::string accumulator_walk(const VectorVisit& visit) const override {
    const int ld = math_.warp_cols() + kStripPad;
    std::string s = fmt::format("  float* strip = reinterpret_cast<float*>(kiln_smem) + warp * {};\n", 16 * ld);
    s += "#pragma unroll\n  for (int mi = 0; mi < " + std::to_string(math_.frag_rows()) + "; ++mi) {\n";
    s += fmt::format("#pragma unroll\n    for (int ni = 0; ni < {}; ++ni) {{\n", math_.frag_cols());
    s += fmt::format("      float* at = strip + (lane >> 2) * {} + ni * 8 + (lane & 3) * 2;\n", ld);
    s += "      *reinterpret_cast<float2*>(at) = make_float2(acc[mi][ni][0], acc[mi][ni][1]);\n";
    s += fmt::format("      *reinterpret_cast<float2*>(at + {}) = make_float2(acc[mi][ni][2], acc[mi][ni][3]);\n",
                     8 * ld);
    s += "    }\n    __syncwarp();\n";
    s += vector_loop("    ", [&](const std::string& in, const std::string& m, const std::string& n) {
      std::string body = fmt::format("{}const float* from = strip + (lane & 15) * {} + col;\n", in, ld);
      body += in + "const float4 lo = *reinterpret_cast<const float4*>(from);\n";
      body += in + "const float4 hi = *reinterpret_cast<const float4*>(from + 4);\n";
      body += in + "const float values[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};\n";
      return body + visit(in, m, n, "values");
    });
    return s + "    __syncwarp();\n  }\n";
  }

  std::string position_walk(const VectorVisit& visit) const override {
    std::string s = "#pragma unroll\n  for (int mi = 0; mi < " + std::to_string(math_.frag_rows()) + "; ++mi) {\n";
    s += vector_loop("    ", [&](const std::string& in, const std::string& m, const std::string& n) {
      return visit(in, m, n, "");
    });
    return s + "  }\n";
  }

private:
  std::string b_stage(const std::string& stage) const {
    return fmt::format("({} + {})", stage, a_.tile().bytes());
  }

  // The 16 x (warp columns) strip of fragment row mi as vectors of 8 columns: lane l
  // takes row l % 16 and every other vector, starting at vector l / 16.
  std::string vector_loop(const std::string& in,
                          const std::function<std::string(const std::string&, const std::string&,
                                                          const std::string&)>& body) const {
    const int per_lane = math_.warp_cols() / 16;
    std::string s = fmt::format("{}#pragma unroll\n{}for (int v = 0; v < {}; ++v) {{\n", in, in, per_lane);
    const std::string inner = in + "  ";
    s += inner + "const int col = (v * 2 + (lane >> 4)) * 8;\n";
    s += body(inner, fmt::format("m0 + warp_m * {} + mi * 16 + (lane & 15)", math_.warp_rows()),
              fmt::format("n0 + warp_n * {} + col", math_.warp_cols()));
    return s + in + "}\n";
  }

  const ir::Kernel& k_;
  const ir::TileConfig& c_;
  OperandLoad a_, b_;
  MmaStage math_;
};

}  // namespace

std::unique_ptr<GemmSchedule> make_mma_schedule(const ir::Kernel& k, const std::vector<std::string>& params) {
  return std::make_unique<MmaSchedule>(k, params);
}

}  // namespace kiln::codegen
