// The autotuner on the GPU: every candidate of a pointwise kernel is checked against
// the reference before it is timed, the best is recorded, tuning twice picks the same
// config, and a program compiled with tuning computes what the reference does.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "frontend/kiln.h"
#include "gpu_test_util.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "runtime/autotuner.h"
#include "runtime/tuning_db.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr const char* kGraph = R"(
func @tuned(%x: f16[1031,4099], %s: f16[4099]) -> (f16[1031,4099]) {
  %0 = mul %x, %s : f16[1031,4099]
  %y = gelu %0 {approximate = "tanh"} : f16[1031,4099]
  return %y
}
)";

class TuneDbEnv {
public:
  TuneDbEnv() {
    fs::path dir = fs::temp_directory_path() / ("kiln_autotuner_gpu_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    path_ = (dir / "tuning.json").string();
    fs::remove(path_);
    setenv("KILN_TUNE_DB", path_.c_str(), 1);
    setenv("KILN_TUNE", "use", 1);
  }
  ~TuneDbEnv() {
    unsetenv("KILN_TUNE_DB");
    unsetenv("KILN_TUNE");
  }
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

struct Swept {
  ir::Graph graph;
  ir::Kernel kernel;
  runtime::KernelReference reference;
};

Swept prepare() {
  ir::Graph g = ir::parse(kGraph);
  runtime::Program p = runtime::Program::compile(g);
  Swept s{p.graph().clone(), p.kernels().at(0).kernel, {}};
  s.reference = runtime::kernel_references(s.graph, {s.kernel}).at(0);
  return s;
}

TEST(AutotunerGpu, EveryCandidateIsCheckedAndTheBestIsFastest) {
  KILN_REQUIRE_GPU();
  Swept s = prepare();
  runtime::TuneResult r = runtime::tune_kernel(s.kernel, s.reference);
  ASSERT_EQ(r.trials.size(), ir::candidates(s.kernel).size());
  ASSERT_GE(r.best, 0);
  for (const runtime::Trial& t : r.trials) {
    EXPECT_NE(t.status, runtime::TrialStatus::CheckFailed) << t.config.str() << ": " << t.detail;
    EXPECT_NE(t.status, runtime::TrialStatus::CompileFailed) << t.config.str() << ": " << t.detail;
    if (t.status == runtime::TrialStatus::Ok) {
      EXPECT_TRUE(std::isfinite(t.median_ms) && t.median_ms > 0) << t.config.str();
      EXPECT_NE(t.detail.find("ok"), std::string::npos) << "the check's verdict is kept: " << t.detail;
      // The pick is the fastest, or tied with it: within 3% the default config wins.
      EXPECT_GE(t.median_ms * 1.03, r.trials[r.best].median_ms) << t.config.str();
    }
  }
  EXPECT_EQ(r.kernel.config, r.trials[r.best].config);
}

TEST(AutotunerGpu, CompileWithTuningRecordsTheBestAndMatchesTheReference) {
  KILN_REQUIRE_GPU();
  TuneDbEnv env;
  ir::Graph g = ir::parse(kGraph);
  runtime::Program p = runtime::Program::compile(g, {.tune = true});
  runtime::TuningDb db = runtime::TuningDb::load(env.path());
  ASSERT_EQ(db.records().size(), 1u);
  const runtime::TuningRecord& rec = db.records()[0];
  EXPECT_EQ(rec.chosen, p.kernels().at(0).kernel.config);
  EXPECT_EQ(rec.trials.size(), ir::candidates(p.kernels()[0].kernel).size());

  std::vector<HostTensor> inputs = {random_tensor(g.inputs()[0]->type, 11), random_tensor(g.inputs()[1]->type, 12)};
  std::vector<HostTensor> got = p.run(inputs);
  Comparison c = compare(got.at(0), ir::evaluate(g, inputs).at(0));
  EXPECT_TRUE(c.passed) << c.str();

  // A later compile without tuning reads the record back through `tile`.
  runtime::Program again = runtime::Program::compile(g);
  EXPECT_EQ(again.kernels().at(0).kernel.config, rec.chosen);
}

TEST(AutotunerGpu, TuningTwicePicksTheSameConfig) {
  KILN_REQUIRE_GPU();
  Swept s = prepare();
  runtime::TuneResult first = runtime::tune_kernel(s.kernel, s.reference);
  runtime::TuneResult second = runtime::tune_kernel(s.kernel, s.reference);
  ASSERT_GE(first.best, 0);
  EXPECT_EQ(first.kernel.config, second.kernel.config);
}

TEST(AutotunerGpu, SweepFitsTheTimeBudget) {
  KILN_REQUIRE_GPU();
  Swept s = prepare();
  runtime::TuneOptions options;
  options.max_seconds = 0.5;
  runtime::TuneResult r = runtime::tune_kernel(s.kernel, s.reference, options);
  bool over_budget = false;
  for (const runtime::Trial& t : r.trials) over_budget = over_budget || t.status == runtime::TrialStatus::OverBudget;
  EXPECT_TRUE(over_budget || r.wall_s < 1.5) << r.wall_s;
}

}  // namespace
}  // namespace kiln
