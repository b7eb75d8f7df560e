// The simt schedule: exact fp32 products on CUDA cores. Operands reach shared memory
// as in the mma_sync schedule (gemm_operand_load.h: the same swizzled tiles, cp.async
// where aligned); 256 threads in a 16 x 16 grid then each multiply a (bm / 16) x
// (bn / 16) block of the tile with FFMA, reading per K element a column of A and a row
// of B: rows ty * V + 16 * V * i + v and columns tx * W + 16 * W * j + w, with V and W
// up to 4, so that a thread's consecutive elements sit in one 16-byte chunk and its
// outputs leave as vectors of W columns.
#include <fmt/format.h>

#include <algorithm>

#include "codegen/gemm_operand_load.h"
#include "codegen/gemm_schedule.h"
#include "ir/tile_config.h"

namespace kiln::codegen {

namespace {

constexpr int kGrid = 16;  // threads along each side of the tile

class SimtSchedule : public GemmSchedule {
public:
  SimtSchedule(const ir::Kernel& k, const std::vector<std::string>& params)
      : k_(k), c_(k.config),
        a_(k, true, params.at(static_cast<size_t>(k.gemm.a.arg)), c_.bm, c_.bk, ir::gemm_threads(c_)),
        b_(k, false, params.at(static_cast<size_t>(k.gemm.b.arg)), c_.bn, c_.bk, ir::gemm_threads(c_)) {
    tm_ = c_.bm / kGrid;
    tn_ = c_.bn / kGrid;
    vm_ = std::min(4, tm_);
    vn_ = std::min(4, tn_);
  }

  std::string describe() const override {
    return fmt::format("//   256 threads (16 x 16), each {} x {} outputs by fp32 FFMA\n//   {}\n//   {}\n", tm_, tn_,
                       a_.describe(), b_.describe());
  }
  int threads() const override { return kGrid * kGrid; }
  int stage_bytes() const override { return a_.tile().bytes() + b_.tile().bytes(); }
  int stages() const override { return c_.stages; }
  bool async_copies() const override { return a_.async() || b_.async(); }

  std::string setup() const override {
    std::string s = fmt::format("  const int tx = (int)threadIdx.x % {}, ty = (int)threadIdx.x / {};\n", kGrid, kGrid);
    return s + a_.setup("m0") + b_.setup("n0");
  }

  std::string accumulators() const override {
    return fmt::format("  float acc[{}][{}];\n#pragma unroll\n  for (int i = 0; i < {}; ++i)\n#pragma unroll\n"
                       "    for (int j = 0; j < {}; ++j) acc[i][j] = 0.0f;\n",
                       tm_, tn_, tm_, tn_);
  }

  std::string issue(const std::string& in, const std::string& stage, const std::string& k0) const override {
    return a_.issue(in, stage, k0) + b_.issue(in, b_stage(stage), k0);
  }
  std::string commit(const std::string& in, const std::string& stage, const std::string& k0) const override {
    return a_.commit(in, stage, k0) + b_.commit(in, b_stage(stage), k0);
  }

  int k_steps() const override { return c_.bk; }  // one K element per step
  std::string fragments() const override {
    return fmt::format("  float a[2][{}], b[2][{}];  // a column of A and a row of B, two K elements of them\n", tm_, tn_);
  }
  std::string load_fragments(const std::string& in, const std::string& buf, const std::string& stage,
                             const std::string& kk) const override {
    return operand_column(in, a_, stage, "ty", vm_, tm_, fmt::format("a[{}]", buf), kk) +
           operand_column(in, b_, b_stage(stage), "tx", vn_, tn_, fmt::format("b[{}]", buf), kk);
  }
  std::string multiply(const std::string& in, const std::string& buf) const override {
    std::string s = fmt::format("{}#pragma unroll\n{}for (int i = 0; i < {}; ++i)\n", in, in, tm_);
    return s + fmt::format("{}#pragma unroll\n{}  for (int j = 0; j < {}; ++j) acc[i][j] = fmaf(a[{}][i], b[{}][j], acc[i][j]);\n",
                           in, in, tn_, buf, buf);
  }

  int vec() const override { return vn_; }

  std::string accumulator_walk(const VectorVisit& visit) const override {
    return walk([&](const std::string& in, const std::string& m, const std::string& n) {
      std::vector<std::string> values;
      for (int w = 0; w < vn_; ++w) values.push_back(fmt::format("acc[i * {} + v][j * {} + {}]", vm_, vn_, w));
      return fmt::format("{}const float values[{}] = {{{}}};\n", in, vn_, fmt::join(values, ", ")) +
             visit(in, m, n, "values");
    });
  }

  std::string position_walk(const VectorVisit& visit) const override {
    return walk([&](const std::string& in, const std::string& m, const std::string& n) { return visit(in, m, n, ""); });
  }

private:
  std::string b_stage(const std::string& stage) const { return fmt::format("({} + {})", stage, a_.tile().bytes()); }

  // The thread's `count` elements of the operand's K row `kk` (A: a column of the tile
  // along M; B: a row along N) into `out`: one vector of `v` per group where the tile
  // runs along M or N, one word each where it runs along K.
  std::string operand_column(const std::string& in, const OperandLoad& op, const std::string& stage,
                             const std::string& coord, int v, int count, const std::string& out,
                             const std::string& kk) const {
    const SharedTile& t = op.tile();
    std::string s;
    for (int g = 0; g < count / v; ++g) {
      const std::string first = fmt::format("{} * {} + {}", coord, v, g * kGrid * v);  // the group's first element
      if (!op.k_contiguous()) {
        // Row kk of the tile holds the group's v consecutive elements inside one chunk.
        const std::string at = fmt::format("kiln_smem + {} + {} + (({}) % 4) * 4", stage,
                                           t.offset_code(kk, fmt::format("({}) / 4", first)), first);
        if (v == 4) {
          s += fmt::format("{}{{ const float4 q = *reinterpret_cast<const float4*>({});\n", in, at);
          s += fmt::format("{}  {}[{}] = q.x; {}[{}] = q.y; {}[{}] = q.z; {}[{}] = q.w; }}\n", in, out, g * 4, out,
                           g * 4 + 1, out, g * 4 + 2, out, g * 4 + 3);
        } else {
          s += fmt::format("{}{{ const float2 q = *reinterpret_cast<const float2*>({});\n", in, at);
          s += fmt::format("{}  {}[{}] = q.x; {}[{}] = q.y; }}\n", in, out, g * 2, out, g * 2 + 1);
        }
        continue;
      }
      // K runs along the tile's rows: one word per element, at column kk of its row.
      for (int e = 0; e < v; ++e) {
        const std::string row = fmt::format("{} + {}", first, e);
        s += fmt::format("{}{}[{}] = *reinterpret_cast<const float*>(kiln_smem + {} + {} + (({}) % 4) * 4);\n", in,
                         out, g * v + e, stage, t.offset_code(row, fmt::format("({}) / 4", kk)), kk);
      }
    }
    return s;
  }

  // Every vector of the thread's outputs: row group i, row v, column group j.
  std::string walk(const std::function<std::string(const std::string&, const std::string&, const std::string&)>& body)
      const {
    std::string s = fmt::format("#pragma unroll\n  for (int i = 0; i < {}; ++i)\n#pragma unroll\n"
                                "    for (int v = 0; v < {}; ++v)\n#pragma unroll\n      for (int j = 0; j < {}; ++j) {{\n",
                                tm_ / vm_, vm_, tn_ / vn_);
    s += body("        ", fmt::format("m0 + ty * {} + i * {} + v", vm_, kGrid * vm_),
              fmt::format("n0 + tx * {} + j * {}", vn_, kGrid * vn_));
    return s + "      }\n";
  }

  const ir::Kernel& k_;
  const ir::TileConfig& c_;
  OperandLoad a_, b_;
  int tm_ = 0, tn_ = 0, vm_ = 0, vn_ = 0;
};

}  // namespace

std::unique_ptr<GemmSchedule> make_simt_schedule(const ir::Kernel& k, const std::vector<std::string>& params) {
  return std::make_unique<SimtSchedule>(k, params);
}

}  // namespace kiln::codegen
