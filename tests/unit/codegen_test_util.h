// Shared by the codegen tests: generated CUDA must compile through NVRTC, for the
// H200 (sm_90a) and for sm_80, without a single warning.
#pragma once
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "codegen/emit.h"
#include "ir/error.h"
#include "ir/tile_config.h"
#include "runtime/nvrtc.h"

namespace kiln::test {

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// ptxas -v's spill stores for one compile of `k` for `arch` (its rules in scope), which
// must give no warning (a serialised wgmma pipeline is one); -1 where ptxas named none.
inline int ptxas_spill_bytes(const ir::Kernel& k, const std::string& arch) {
  const ir::TargetScope target(arch);
  runtime::CompileResult r =
      runtime::compile_cuda(codegen::emit_cuda(k), k.name, runtime::CompileOptions{arch, {"--ptxas-options=-v"}});
  EXPECT_FALSE(r.cubin.empty());
  EXPECT_FALSE(contains(r.log, "warning")) << r.log;
  std::smatch m;
  if (std::regex_search(r.log, m, std::regex("([0-9]+) bytes spill stores"))) return std::stoi(m[1]);
  return -1;
}

// What ir::validate says is wrong with config `c` of `k`, or "accepted".
inline std::string rule_broken(const ir::Kernel& k, const ir::TileConfig& c) {
  try {
    ir::validate(k, c);
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

// `k` in each config of `sweep` with at most two K slices (the split's part of the source is
// the same for every count): legal, and compiled for sm_90a without spills. Returns how many.
inline int expect_each_compiles_without_spills(const ir::Kernel& k, const std::vector<ir::TileConfig>& sweep) {
  int compiled = 0;
  for (const ir::TileConfig& c : sweep) {
    if (c.split_k > 2) continue;
    ir::Kernel v = k;
    v.config = c;
    SCOPED_TRACE(c.str());
    EXPECT_NO_THROW(ir::validate(v, c));
    EXPECT_EQ(ptxas_spill_bytes(v, "sm_90a"), 0);
    ++compiled;
  }
  return compiled;
}

// The kernels as lowering for `arch` would config them: a config that needs a newer
// GPU (a cluster on sm_80) gives way to that arch's default.
inline std::vector<ir::Kernel> configured_for(std::vector<ir::Kernel> kernels, const std::string& arch) {
  const ir::TargetScope target(arch);
  for (ir::Kernel& k : kernels) {
    try {
      ir::validate(k, k.config);
    } catch (const Error&) {
      k.config = ir::heuristic(k);
    }
  }
  return kernels;
}

// Compiles `kernels` as one program for both targets; NVRTC must not even warn.
inline void expect_compiles(const std::vector<ir::Kernel>& kernels, const std::string& name) {
  for (const char* arch : {"sm_90a", "sm_80"}) {
    std::string source = codegen::emit_cuda(configured_for(kernels, arch));
    try {
      runtime::CompileResult r = runtime::compile_cuda(source, name, runtime::CompileOptions{arch, {}});
      EXPECT_FALSE(r.cubin.empty()) << arch;
      EXPECT_FALSE(contains(r.log, "warning")) << arch << "\n" << r.log << "\n" << source;
    } catch (const Error& e) {
      ADD_FAILURE() << arch << ": " << e.what() << "\n" << source;
    }
  }
}

}  // namespace kiln::test
