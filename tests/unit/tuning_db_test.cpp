// The tuning database: its JSON round trip, atomic writes, damaged files, the
// key-field miss messages, the stable tie-break and kernel signatures.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "ir/kernel.h"
#include "ir/tile_config.h"
#include "runtime/tuning_db.h"

using namespace kiln;
using runtime::Trial;
using runtime::TrialStatus;
using runtime::TuningDb;
using runtime::TuningKey;
using runtime::TuningRecord;

namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("kiln_tuning_db_test_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TuningKey key(std::string arch = "sm_90a") {
  return TuningKey{"abc123", "NVIDIA H200", std::move(arch), 13000, "0.1.0"};
}

ir::TileConfig config(int threads, int elems, int vec) {
  ir::TileConfig c;
  c.threads = threads;
  c.elems = elems;
  c.vec = vec;
  return c;
}

Trial trial(ir::TileConfig c, TrialStatus status, double ms) {
  Trial t;
  t.config = c;
  t.status = status;
  t.median_ms = ms;
  return t;
}

TuningRecord sample_record() {
  TuningRecord r;
  r.key = key();
  r.kernel = "kernel @k pointwise(...) {}\n";
  r.trials = {trial(config(128, 4, 4), TrialStatus::Ok, 0.25),
              trial(config(1024, 16, 4), TrialStatus::OutOfResources, std::numeric_limits<double>::infinity()),
              trial(config(256, 8, 4), TrialStatus::Ok, 0.125)};
  r.chosen = config(256, 8, 4);
  return r;
}

ir::Kernel add_kernel(Shape shape) {
  ir::Kernel k;
  k.name = "k0";
  TensorType t{DType::f32, shape};
  auto strides = ir::contiguous_strides(shape);
  k.args = {{"a", t, false, strides, 0}, {"b", t, false, strides, 1}, {"y", t, true, strides, 2}};
  ir::ScalarOp la, lb;
  la.kind = lb.kind = ir::ScalarKind::Load;
  la.arg = 0;
  lb.arg = 1;
  int a = k.add(la), b = k.add(lb);
  ir::ScalarOp add;
  add.op = ir::OpKind::Add;
  add.operands = {a, b};
  int s = k.add(add);
  ir::ScalarOp store;
  store.kind = ir::ScalarKind::Store;
  store.arg = 2;
  store.operands = {s};
  k.add(store);
  return k;
}

}  // namespace

TEST(TuningDb, RoundTripKeepsEveryField) {
  fs::path path = fresh_dir("roundtrip") / "tuning.json";
  TuningDb db;
  db.put(sample_record());
  db.save(path.string());
  TuningDb back = TuningDb::load(path.string());
  ASSERT_EQ(back.records().size(), 1u);
  const TuningRecord& r = back.records()[0];
  EXPECT_EQ(r.key.signature, "abc123");
  EXPECT_EQ(r.key.device, "NVIDIA H200");
  EXPECT_EQ(r.key.arch, "sm_90a");
  EXPECT_EQ(r.key.nvrtc_version, 13000);
  EXPECT_EQ(r.key.kiln_version, "0.1.0");
  EXPECT_EQ(r.chosen, config(256, 8, 4));
  ASSERT_EQ(r.trials.size(), 3u);
  EXPECT_EQ(r.trials[0].median_ms, 0.25);
  EXPECT_EQ(r.trials[1].status, TrialStatus::OutOfResources);
  EXPECT_TRUE(std::isinf(r.trials[1].median_ms));
  EXPECT_EQ(r.trials[2].config, config(256, 8, 4));
}

TEST(TuningDb, MissingFileIsEmpty) {
  EXPECT_TRUE(TuningDb::load((fresh_dir("missing") / "none.json").string()).records().empty());
}

TEST(TuningDb, SaveReplacesTheFileAndLeavesNoTempFile) {
  fs::path dir = fresh_dir("atomic");
  fs::path path = dir / "tuning.json";
  { std::ofstream(path) << "old contents"; }
  TuningDb db;
  db.put(sample_record());
  db.save(path.string());
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"tuning.json"});
  EXPECT_EQ(TuningDb::load(path.string()).records().size(), 1u);
}

TEST(TuningDb, SaveCreatesMissingFolders) {
  fs::path path = fresh_dir("folders") / "a" / "b" / "tuning.json";
  TuningDb db;
  db.put(sample_record());
  db.save(path.string());
  EXPECT_TRUE(fs::exists(path));
}

TEST(TuningDb, CorruptFileIsReadAsEmptyWithAWarning) {
  fs::path path = fresh_dir("corrupt") / "tuning.json";
  { std::ofstream(path) << "{\"version\": 1, \"records\": [ {\"signature\": "; }
  testing::internal::CaptureStderr();
  TuningDb db = TuningDb::load(path.string());
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(db.records().empty());
  EXPECT_NE(err.find("damaged"), std::string::npos) << err;
  EXPECT_NE(err.find(path.string()), std::string::npos) << err;
}

TEST(TuningDb, RecordWithMissingFieldsIsReadAsEmpty) {
  fs::path path = fresh_dir("fields") / "tuning.json";
  { std::ofstream(path) << R"({"version": 1, "records": [{"signature": "abc123"}]})"; }
  testing::internal::CaptureStderr();
  TuningDb db = TuningDb::load(path.string());
  testing::internal::GetCapturedStderr();
  EXPECT_TRUE(db.records().empty());
}

TEST(TuningDb, FindNeedsEveryKeyField) {
  TuningDb db;
  db.put(sample_record());
  EXPECT_NE(db.find(key()), nullptr);
  TuningKey other = key();
  other.nvrtc_version = 12080;
  EXPECT_EQ(db.find(other), nullptr);
  other = key();
  other.kiln_version = "0.2.0";
  EXPECT_EQ(db.find(other), nullptr);
}

TEST(TuningDb, EmptyDeviceNameMatchesAnyDevice) {
  TuningDb db;
  db.put(sample_record());
  TuningKey k = key();
  k.device = "";
  EXPECT_NE(db.find(k), nullptr);
}

TEST(TuningDb, MissMessageNamesTheArch) {
  TuningDb db;
  TuningRecord r = sample_record();
  r.key.arch = "sm_80";
  db.put(r);
  EXPECT_EQ(db.explain_miss(key("sm_90a")), "signature matches but arch differs (record sm_80, device sm_90a)");
}

TEST(TuningDb, MissMessageNamesTheDevice) {
  TuningDb db;
  db.put(sample_record());
  TuningKey k = key();
  k.device = "NVIDIA A100";
  EXPECT_EQ(db.explain_miss(k), "signature matches but device differs (record NVIDIA H200, device NVIDIA A100)");
}

TEST(TuningDb, MissMessageForAnUnknownSignature) {
  TuningDb db;
  db.put(sample_record());
  TuningKey k = key();
  k.signature = "other";
  EXPECT_NE(db.explain_miss(k).find("no record with this signature"), std::string::npos);
}

TEST(TuningDb, PutReplacesTheRecordWithTheSameKey) {
  TuningDb db;
  db.put(sample_record());
  TuningRecord r = sample_record();
  r.chosen = config(128, 4, 4);
  db.put(r);
  ASSERT_EQ(db.records().size(), 1u);
  EXPECT_EQ(db.records()[0].chosen, config(128, 4, 4));
}

TEST(ChooseBest, NearTieGoesToTheEarlierCandidate) {
  std::vector<Trial> t = {trial(config(128, 4, 4), TrialStatus::Ok, 1.015),
                          trial(config(256, 4, 4), TrialStatus::Ok, 1.0)};
  EXPECT_EQ(runtime::choose_best(t), 0);
}

TEST(ChooseBest, NearTieGoesToTheDefaultFirst) {
  std::vector<Trial> t = {trial(config(128, 4, 4), TrialStatus::Ok, 1.0),
                          trial(config(256, 4, 4), TrialStatus::Ok, 1.02),
                          trial(config(512, 4, 4), TrialStatus::Ok, 1.01)};
  EXPECT_EQ(runtime::choose_best(t, 0.03, 1), 1);
  EXPECT_EQ(runtime::choose_best(t, 0.01, 1), 0);  // the default is past the tie: the fastest wins
}

TEST(ChooseBest, ClearWinnerBeatsAnEarlierCandidate) {
  std::vector<Trial> t = {trial(config(128, 4, 4), TrialStatus::Ok, 1.05),
                          trial(config(256, 4, 4), TrialStatus::Ok, 1.0)};
  EXPECT_EQ(runtime::choose_best(t), 1);
}

TEST(ChooseBest, IgnoresFailedAndStoppedCandidates) {
  std::vector<Trial> t = {trial(config(128, 4, 4), TrialStatus::CheckFailed, 0.1),
                          trial(config(256, 4, 4), TrialStatus::StoppedEarly, 0.2),
                          trial(config(512, 4, 4), TrialStatus::Ok, 3.0)};
  EXPECT_EQ(runtime::choose_best(t), 2);
  t.pop_back();
  EXPECT_EQ(runtime::choose_best(t), -1);
}

TEST(KernelSignature, IgnoresConfigAndName) {
  ir::Kernel a = add_kernel({64, 256});
  ir::Kernel b = a;
  b.name = "k7";
  b.config = config(256, 8, 4);
  EXPECT_EQ(runtime::kernel_signature(a), runtime::kernel_signature(b));
  EXPECT_EQ(runtime::kernel_signature(a).size(), 64u);
}

TEST(KernelSignature, DependsOnShapes) {
  EXPECT_NE(runtime::kernel_signature(add_kernel({64, 256})), runtime::kernel_signature(add_kernel({64, 257})));
}

// A record tuned for one target (kiln tune --arch sm_90) is found when compiling for it,
// and not for another: the key's arch is the target compiled for, not the GPU's own.
TEST(TuningKey, NamesTheTargetCompiledFor) {
  const ir::Kernel k = add_kernel({64, 256});
  EXPECT_EQ(runtime::current_key(k, "sm_90").arch, "sm_90");
  EXPECT_EQ(runtime::current_key(k, "sm_80").arch, "sm_80");
  {
    const ir::TargetScope target("sm_90");
    EXPECT_EQ(ir::target_arch(), "sm_90");
  }
  const ir::TargetScope target("sm_80");
  EXPECT_EQ(ir::target_arch(), "sm_80");
}
