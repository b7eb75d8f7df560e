// The pass manager: pipeline strings, records, IR dumps, timing, dump files and
// verification after each pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <unistd.h>

#include "ir/error.h"
#include "ir/graph.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"

using namespace kiln;
using ir::OpKind;
using passes::PassManager;

namespace {

// y = exp(x) + exp(x), with an unused neg(x): cse has work, and so has dce.
ir::Graph duplicate_and_dead() {
  ir::Graph g("f");
  ir::Value* x = g.add_input("x", {DType::f32, {8}});
  ir::Value* a = g.add(OpKind::Exp, {x});
  ir::Value* b = g.add(OpKind::Exp, {x});
  g.add(OpKind::Neg, {x});
  ir::Value* y = g.add(OpKind::Add, {a, b});
  y->name = "y";
  g.add_output(y);
  return g;
}

// Options that print nothing and write no files, whatever the environment says.
PassManager::Options quiet() {
  PassManager::Options o;
  o.dump_dir.reset();
  return o;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

size_t count(const std::string& text, const std::string& piece) {
  size_t n = 0;
  for (size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1)) ++n;
  return n;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh folder name under the system's temp folder, removed at the end of the test.
class TempDir {
public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("kiln-pm-" + std::to_string(::getpid()) + "-" + info->name());
    std::filesystem::remove_all(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

private:
  std::filesystem::path path_;
};

// Sets an environment variable for one test.
class ScopedEnv {
public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

private:
  const char* name_;
  std::optional<std::string> old_;
};

// Test-only passes.
class BreakTypes : public passes::Pass {
public:
  std::string_view name() const override { return "break-types"; }
  bool run(ir::Graph& g) override {
    g.nodes().front()->result->type.shape = {3};  // no longer what exp of f32[8] gives
    return true;
  }
};

class ClaimsChange : public passes::Pass {
public:
  std::string_view name() const override { return "claims-change"; }
  bool run(ir::Graph&) override { return true; }
};

class Throws : public passes::Pass {
public:
  std::string_view name() const override { return "throws"; }
  bool run(ir::Graph&) override { throw Error("no can do"); }
};

}  // namespace

TEST(PassManager, PipelineListsPassesInOrder) {
  PassManager pm(" decompose ,simplify,\tcse , dce ", quiet());
  EXPECT_EQ(pm.pass_list(), (std::vector<std::string>{"decompose", "simplify", "cse", "dce"}));
}

TEST(PassManager, EmptyPipelineRunsNothing) {
  ir::Graph g = duplicate_and_dead();
  std::string before = ir::print(g);
  PassManager pm("  ", quiet());
  EXPECT_TRUE(pm.pass_list().empty());
  EXPECT_FALSE(pm.run(g));
  EXPECT_TRUE(pm.records().empty());
  EXPECT_EQ(ir::print(g), before);
}

TEST(PassManager, UnknownPassListsTheKnownOnes) {
  std::string msg = error_of([] { PassManager pm("cse,fold-everything", quiet()); });
  EXPECT_NE(msg.find("unknown pass 'fold-everything'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("decompose, simplify, cse, dce"), std::string::npos) << msg;
}

TEST(PassManager, EmptyEntryInPipelineIsAnError) {
  std::string msg = error_of([] { PassManager pm("cse,,dce", quiet()); });
  EXPECT_NE(msg.find("empty pass name"), std::string::npos) << msg;
}

TEST(PassManager, RegistryKnowsTheDefaultPipeline) {
  for (const std::string& name : passes::split_pipeline(passes::kDefaultPipeline))
    EXPECT_EQ(passes::create_pass(name)->name(), name);
  EXPECT_EQ(passes::pass_class_name("cse"), "CSE");
  EXPECT_EQ(passes::pass_class_name("decompose"), "Decompose");
}

TEST(PassManager, RecordsSayWhichPassChanged) {
  ir::Graph g = duplicate_and_dead();
  PassManager pm("cse,dce", quiet());
  EXPECT_TRUE(pm.run(g));
  ASSERT_EQ(pm.records().size(), 2u);
  EXPECT_EQ(pm.records()[0].name, "cse");
  EXPECT_TRUE(pm.records()[0].changed);
  EXPECT_EQ(pm.records()[1].name, "dce");
  EXPECT_FALSE(pm.records()[1].changed);  // cse already dropped the unused nodes
  EXPECT_GE(pm.records()[0].milliseconds, 0.0);
}

TEST(PassManager, PrintAfterAllShowsEveryPassWithBanner) {
  ir::Graph g = duplicate_and_dead();
  std::ostringstream out;
  auto o = quiet();
  o.print_after_all = true;
  PassManager pm("cse,dce", o, out);
  pm.run(g);
  std::string text = out.str();
  size_t cse = text.find("// -----// IR Dump After CSE (cse) //----- //\nfunc @f(");
  size_t dce = text.find("// -----// IR Dump After DCE (dce) //----- //\nfunc @f(");
  ASSERT_NE(cse, std::string::npos) << text;
  ASSERT_NE(dce, std::string::npos) << text;
  EXPECT_LT(cse, dce);
  EXPECT_EQ(count(text, "IR Dump After"), 2u);
  EXPECT_NE(text.find(ir::print(g)), std::string::npos);
}

TEST(PassManager, PrintAfterNamedPassOnly) {
  ir::Graph g = duplicate_and_dead();
  std::ostringstream out;
  auto o = quiet();
  o.print_after = {"dce"};
  PassManager pm("cse,dce", o, out);
  pm.run(g);
  EXPECT_EQ(count(out.str(), "IR Dump After"), 1u);
  EXPECT_EQ(count(out.str(), "IR Dump After DCE (dce)"), 1u);
}

TEST(PassManager, PrintAfterUnknownPassIsAnError) {
  ir::Graph g = duplicate_and_dead();
  auto o = quiet();
  o.print_after = {"cs"};
  PassManager pm("cse", o);
  std::string msg = error_of([&] { pm.run(g); });
  EXPECT_NE(msg.find("unknown pass 'cs'"), std::string::npos) << msg;
}

TEST(PassManager, PrintAfterChangeSkipsPassesThatChangedNothing) {
  ir::Graph g = duplicate_and_dead();
  std::ostringstream out;
  auto o = quiet();
  o.print_after_change = true;
  PassManager pm("cse,dce", o, out);
  pm.run(g);
  EXPECT_EQ(count(out.str(), "IR Dump After"), 1u) << out.str();
  EXPECT_EQ(count(out.str(), "IR Dump After CSE (cse)"), 1u) << out.str();
}

TEST(PassManager, PrintAfterChangeNeedsTheTextToDiffer) {
  ir::Graph g = duplicate_and_dead();
  std::ostringstream out;
  auto o = quiet();
  o.print_after_change = true;
  PassManager pm("", o, out);
  pm.add(std::make_unique<ClaimsChange>());
  EXPECT_TRUE(pm.run(g));  // the record keeps what the pass said
  EXPECT_EQ(out.str(), "");
}

TEST(PassManager, PrintAfterChangeFiltersPrintAfter) {
  ir::Graph g = duplicate_and_dead();
  std::ostringstream out;
  auto o = quiet();
  o.print_after_change = true;
  o.print_after = {"dce"};  // dce finds nothing left to do after cse
  PassManager pm("cse,dce", o, out);
  pm.run(g);
  EXPECT_EQ(out.str(), "");
}

TEST(PassManager, TimePassesPrintsATable) {
  ir::Graph g = duplicate_and_dead();
  std::ostringstream out;
  auto o = quiet();
  o.time_passes = true;
  PassManager pm("cse,dce", o, out);
  pm.run(g);
  std::string text = out.str();
  EXPECT_NE(text.find("Wall (ms)"), std::string::npos) << text;
  EXPECT_NE(text.find("%  cse\n"), std::string::npos) << text;
  EXPECT_NE(text.find("%  dce\n"), std::string::npos) << text;
  EXPECT_NE(text.find("100.0%  Total\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("IR Dump"), std::string::npos);
}

TEST(PassManager, NothingIsPrintedByDefault) {
  ir::Graph g = duplicate_and_dead();
  std::ostringstream out;
  PassManager pm("cse,dce", quiet(), out);
  pm.run(g);
  EXPECT_EQ(out.str(), "");
}

TEST(PassManager, DumpDirWritesOneNumberedFilePerPass) {
  TempDir tmp;
  ir::Graph g = duplicate_and_dead();
  std::string input = ir::print(g);
  auto o = quiet();
  o.dump_dir = (tmp.path() / "nested").string();  // created when missing
  PassManager pm("cse,dce", o);
  pm.run(g);
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(tmp.path() / "nested"))
    files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"00-input.kiln", "01-cse.kiln", "02-dce.kiln"}));
  EXPECT_EQ(read_file(tmp.path() / "nested" / "00-input.kiln"), input);
  EXPECT_EQ(read_file(tmp.path() / "nested" / "02-dce.kiln"), ir::print(g));
  EXPECT_NE(read_file(tmp.path() / "nested" / "01-cse.kiln"), input);
}

TEST(PassManager, DumpDirComesFromTheEnvironment) {
  ScopedEnv env("KILN_DUMP_DIR", "/some/where");
  PassManager::Options o;
  EXPECT_EQ(o.dump_dir, std::optional<std::string>("/some/where"));
}

TEST(PassManager, DumpDirThatCannotBeWrittenNamesThePath) {
  TempDir tmp;
  std::filesystem::create_directories(tmp.path());
  std::ofstream(tmp.path() / "plain-file") << "x";
  ir::Graph g = duplicate_and_dead();
  auto o = quiet();
  o.dump_dir = (tmp.path() / "plain-file" / "dumps").string();
  PassManager pm("cse", o);
  std::string msg = error_of([&] { pm.run(g); });
  EXPECT_NE(msg.find((tmp.path() / "plain-file" / "dumps").string()), std::string::npos) << msg;
}

TEST(PassManager, DebugLevelThreePrintsEveryPassToStderr) {
  ScopedEnv env("KILN_DEBUG", "3");
  ir::Graph g = duplicate_and_dead();
  std::ostringstream out;
  PassManager pm("cse,dce", quiet(), out);
  ::testing::internal::CaptureStderr();
  pm.run(g);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, "IR Dump After"), 2u) << err;
  EXPECT_EQ(out.str(), "");
}

TEST(PassManager, VerifyEachNamesThePassThatBrokeTheIR) {
  ir::Graph g = duplicate_and_dead();
  auto o = quiet();
  o.verify_each = true;
  PassManager pm("cse", o);
  pm.add(std::make_unique<BreakTypes>());
  pm.add(passes::create_pass("dce"));
  std::string msg = error_of([&] { pm.run(g); });
  EXPECT_NE(msg.find("pass 'break-types' produced invalid IR"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f32[3]"), std::string::npos) << msg;  // the verifier's own words follow
  EXPECT_EQ(pm.records().size(), 2u);  // dce never ran
}

TEST(PassManager, VerifyEachOffLetsBrokenIRThrough) {
  ir::Graph g = duplicate_and_dead();
  auto o = quiet();
  o.verify_each = false;
  PassManager pm("", o);
  pm.add(std::make_unique<BreakTypes>());
  EXPECT_NO_THROW(pm.run(g));
}

TEST(PassManager, VerifyEachDefaultsToTheBuildType) {
#ifdef NDEBUG
  EXPECT_FALSE(PassManager::Options().verify_each);
#else
  EXPECT_TRUE(PassManager::Options().verify_each);
#endif
}

TEST(PassManager, ErrorInsideAPassNamesIt) {
  ir::Graph g = duplicate_and_dead();
  PassManager pm("", quiet());
  pm.add(std::make_unique<Throws>());
  std::string msg = error_of([&] { pm.run(g); });
  EXPECT_NE(msg.find("pass 'throws' failed: no can do"), std::string::npos) << msg;
}
