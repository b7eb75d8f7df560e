// The autotuner's GPU-free parts and the `tile` pass's use of the tuning database:
// candidates compiled in parallel (dry run), per-kernel references, the database
// record picked by `tile` when every key field matches, and the heuristic otherwise.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "ir/error.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/tile_config.h"
#include "passes/lower.h"
#include "passes/pass.h"
#include "runtime/autotuner.h"
#include "runtime/cuda_driver.h"
#include "runtime/program.h"
#include "runtime/tuning_db.h"

using namespace kiln;

namespace {

namespace fs = std::filesystem;

constexpr const char* kGraph = R"(
func @chain(%a: f32[37,129], %b: f32[129]) -> (f32[37,129]) {
  %0 = mul %a, %b : f32[37,129]
  %y = add %0, %a : f32[37,129]
  return %y
}
)";

// Sets an environment variable for one test and restores the old value afterwards.
class ScopedEnv {
public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

private:
  const char* name_;
  std::optional<std::string> old_;
};

ir::Graph fused(const char* text = kGraph) {
  ir::Graph g = ir::parse(text);
  passes::create_pass("fuse")->run(g);
  return g;
}

ir::Kernel first_kernel(const ir::Graph& g) { return passes::lower_group(g, 0, ir::value_names(g)); }

// A legal config of `k` other than the heuristic's: what a tuning record would hold.
ir::TileConfig non_default_config(const ir::Kernel& k) {
  ir::TileConfig def = ir::heuristic(k);
  for (const ir::TileConfig& c : ir::candidates(k))
    if (c != def) return c;
  throw Error("the kernel has a single candidate");
}

std::string temp_db(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("kiln_autotuner_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path p = dir / (name + ".json");
  fs::remove(p);
  return p.string();
}

// Writes a one-record database for `k` choosing `chosen`, keyed as `tile` will look it up.
void write_record(const std::string& path, const ir::Kernel& k, const ir::TileConfig& chosen,
                  const std::string& arch = "") {
  runtime::TuningRecord r;
  r.key = runtime::current_key(k);
  if (!arch.empty()) r.key.arch = arch;
  r.key.device = "NVIDIA H200";
  runtime::Trial t;
  t.config = chosen;
  t.status = runtime::TrialStatus::Ok;
  t.median_ms = 0.01;
  r.trials = {t};
  r.chosen = chosen;
  runtime::TuningDb db;
  db.put(r);
  db.save(path);
}

ir::TileConfig tiled_config(ir::Graph& g) {
  passes::create_pass("tile")->run(g);
  return ir::TileConfig::from_attrs(g.groups().at(0).tile);
}

bool no_gpu() { return !runtime::gpu_available(); }

}  // namespace

TEST(Autotuner, CompilesEveryCandidateInParallel) {
  ir::Kernel k = first_kernel(fused());
  std::vector<ir::TileConfig> configs = ir::candidates(k);
  ASSERT_GT(configs.size(), 1u);
  std::vector<runtime::CandidateBuild> builds = runtime::compile_candidates(k, "sm_90a", 2);
  ASSERT_EQ(builds.size(), configs.size());
  for (size_t i = 0; i < builds.size(); ++i) {
    EXPECT_EQ(builds[i].trial.config, configs[i]) << "candidate order is kept";
    EXPECT_EQ(builds[i].trial.status, runtime::TrialStatus::NotTimed) << builds[i].trial.detail;
    EXPECT_FALSE(builds[i].binary.cubin.empty()) << configs[i].str();
    EXPECT_NE(builds[i].source.find(k.name), std::string::npos);
  }
}

TEST(Autotuner, EveryCandidateIsLegal) {
  ir::Kernel k = first_kernel(fused());
  for (const ir::TileConfig& c : ir::candidates(k)) EXPECT_NO_THROW(ir::validate(k, c)) << c.str();
}

TEST(Autotuner, IllegalConfigIsRefusedBeforeCompiling) {
  ir::Kernel k = first_kernel(fused());
  ir::TileConfig bad = ir::heuristic(k);
  bad.vec = 3;  // not a power of two, and 37 * 129 elements of f32 cannot be read 3 at a time in 16 bytes
  EXPECT_THROW(ir::validate(k, bad), Error);
}

TEST(Autotuner, DryRunListsCompileTimesOnly) {
  ir::Kernel k = first_kernel(fused());
  runtime::TuneOptions options;
  options.arch = "sm_90a";
  runtime::TuneResult r = runtime::dry_run_kernel(k, options);
  EXPECT_EQ(r.trials.size(), ir::candidates(k).size());
  EXPECT_EQ(r.best, -1);
  EXPECT_EQ(r.key.arch, "sm_90a");
  for (const runtime::Trial& t : r.trials) {
    EXPECT_EQ(t.status, runtime::TrialStatus::NotTimed);
    EXPECT_GT(t.compile_ms, 0) << t.config.str();
  }
}

TEST(Autotuner, KernelBytesCountEveryArgument) {
  ir::Kernel k = first_kernel(fused());
  // a and y: 37 * 129 floats each; b: 129 floats.
  EXPECT_EQ(runtime::kernel_bytes(k), 4.0 * (2 * 37 * 129 + 129));
}

TEST(Autotuner, ReferenceHoldsTheKernelsInputsAndOutputs) {
  ir::Graph g = fused();
  ir::Kernel k = first_kernel(g);
  std::vector<runtime::KernelReference> refs = runtime::kernel_references(g, {k});
  ASSERT_EQ(refs.size(), 1u);
  ASSERT_EQ(refs[0].inputs.size(), 2u);
  ASSERT_EQ(refs[0].outputs.size(), 1u);
  const HostTensor& a = refs[0].inputs[0];
  const HostTensor& b = refs[0].inputs[1];
  const HostTensor& y = refs[0].outputs[0];
  ASSERT_EQ(a.numel(), 37 * 129);
  ASSERT_EQ(b.numel(), 129);
  for (int64_t r = 0; r < 37; r += 9)
    for (int64_t c = 0; c < 129; c += 16) {
      double x = a.values[r * 129 + c];
      double want = round_to(DType::f32, round_to(DType::f32, x * b.values[c]) + x);
      EXPECT_EQ(y.values[r * 129 + c], want) << r << "," << c;
    }
}

TEST(Autotuner, TuningWithoutAGpuIsAClearError) {
  if (!no_gpu()) GTEST_SKIP() << "a GPU is present";
  ir::Graph g = fused();
  ir::Kernel k = first_kernel(g);
  try {
    runtime::tune_kernel(k, runtime::kernel_references(g, {k})[0]);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tuning needs a GPU"), std::string::npos) << e.what();
  }
}

TEST(Autotuner, CompileWithTuningNeedsAGpu) {
  if (!no_gpu()) GTEST_SKIP() << "a GPU is present";
  ScopedEnv tune("KILN_TUNE", "use");
  runtime::ProgramOptions options{.arch = "sm_90a", .tune = true};
  EXPECT_THROW(runtime::Program::compile(ir::parse(kGraph), options), Error);
}

TEST(TilePass, PicksTheRecordedConfig) {
  ir::Graph g = fused();
  ir::Kernel k = first_kernel(g);
  ir::TileConfig tuned = non_default_config(k);
  std::string db = temp_db("match");
  ScopedEnv path("KILN_TUNE_DB", db), mode("KILN_TUNE", "use");
  write_record(db, k, tuned);
  EXPECT_EQ(tiled_config(g), tuned);
}

TEST(TilePass, ProgramCompilesWithTheRecordedConfig) {
  ir::Graph g = fused();
  ir::Kernel k = first_kernel(g);
  ir::TileConfig tuned = non_default_config(k);
  std::string db = temp_db("program");
  ScopedEnv path("KILN_TUNE_DB", db), mode("KILN_TUNE", "use");
  write_record(db, k, tuned);
  runtime::Program p = runtime::Program::compile(ir::parse(kGraph), {.arch = "sm_90a"});
  ASSERT_EQ(p.kernels().size(), 1u);
  EXPECT_EQ(p.kernels()[0].kernel.config, tuned);
}

TEST(TilePass, UsesTheHeuristicWhenTuningIsOff) {
  ir::Graph g = fused();
  ir::Kernel k = first_kernel(g);
  std::string db = temp_db("off");
  ScopedEnv path("KILN_TUNE_DB", db), mode("KILN_TUNE", "off");
  write_record(db, k, non_default_config(k));
  EXPECT_EQ(tiled_config(g), ir::heuristic(k));
}

TEST(TilePass, UsesTheHeuristicWhenTheArchDiffers) {
  ir::Graph g = fused();
  ir::Kernel k = first_kernel(g);
  std::string db = temp_db("arch");
  ScopedEnv path("KILN_TUNE_DB", db), mode("KILN_TUNE", "use"), arch("KILN_ARCH", "sm_90a");
  write_record(db, k, non_default_config(k), "sm_80");
  EXPECT_EQ(tiled_config(g), ir::heuristic(k));
}

TEST(TilePass, SaysWhichKeyFieldMissed) {
  if (!no_gpu()) GTEST_SKIP() << "the device's own arch would be compared";
  ir::Graph g = fused();
  ir::Kernel k = first_kernel(g);
  std::string db = temp_db("debug");
  ScopedEnv path("KILN_TUNE_DB", db), mode("KILN_TUNE", "use"), arch("KILN_ARCH", "sm_90a"),
      debug("KILN_DEBUG", "2");
  write_record(db, k, non_default_config(k), "sm_80");
  testing::internal::CaptureStderr();
  tiled_config(g);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("k0: no tuning record: signature matches but arch differs (record sm_80, device sm_90a)"),
            std::string::npos)
      << err;
}

TEST(TilePass, UsesTheHeuristicWithoutARecord) {
  ir::Graph g = fused();
  ir::Kernel k = first_kernel(g);
  ScopedEnv path("KILN_TUNE_DB", temp_db("empty")), mode("KILN_TUNE", "use");
  EXPECT_EQ(tiled_config(g), ir::heuristic(k));
}

TEST(TilePass, KeepsAPinnedConfig) {
  ir::Graph g = fused();
  ir::Kernel k = first_kernel(g);
  ir::TileConfig pinned = non_default_config(k);
  g.group(0).tile = pinned.to_attrs();
  ScopedEnv path("KILN_TUNE_DB", temp_db("pinned")), mode("KILN_TUNE", "use");
  EXPECT_EQ(tiled_config(g), pinned);
}
