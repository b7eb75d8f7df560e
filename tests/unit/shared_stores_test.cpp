// Two processes compiling and tuning at once share the on-disk compile cache and the
// tuning database: every record either of them adds survives, and neither ever reads
// a torn entry or a damaged database. Each child hammers both stores; the parent
// then checks what is on disk.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "runtime/compile_cache.h"
#include "runtime/tuning_db.h"

using namespace kiln;
using namespace kiln::runtime;
namespace fs = std::filesystem;

namespace {

constexpr int kProcesses = 2;
constexpr int kRecordsEach = 40;
constexpr int kSources = 3;  // kernels both processes compile

std::string source(int i) {
  return "extern \"C\" __global__ void scale" + std::to_string(i) +
         "(float* y, int n) {\n"
         "  int j = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (j < n) y[j] *= " + std::to_string(i + 2) + ".0f;\n}\n";
}

TuningRecord record(int process, int i) {
  TuningRecord r;
  r.key = TuningKey{"sig-" + std::to_string(process) + "-" + std::to_string(i), "dev", "sm_90a", 1, "0"};
  r.kernel = "kernel text " + std::to_string(i);
  Trial t;
  t.status = TrialStatus::Ok;
  t.median_ms = 0.5 + i;
  t.config.threads = 256;
  r.trials.push_back(t);
  r.chosen = t.config;
  return r;
}

// One child's work; its exit status says what went wrong (0: nothing).
int hammer(int process, const std::string& cache_dir, const std::string& db_path) {
  const CompileOptions sm90a{.arch = "sm_90a", .extra_flags = {}};
  CompileCache cache(cache_dir);
  for (int i = 0; i < kRecordsEach; ++i) {
    TuningDb::record(db_path, {record(process, i)});
    // Everything this process wrote must still be there, whatever the other wrote since.
    TuningDb db = TuningDb::load(db_path);
    for (int j = 0; j <= i; ++j)
      if (!db.find(record(process, j).key)) return 1;
    if (i % 8 == 0) {  // from disk (or NVRTC) every time: the memory copy is dropped first
      cache.clear_memory();
      for (int s = 0; s < kSources; ++s)
        if (cache.compile(source(s), "scale.cu", sm90a).ptx.empty()) return 2;
    }
  }
  if (cache.stats().disk_rejected != 0) return 3;  // a torn entry was read
  if (!cache.on_disk()) return 4;
  return 0;
}

TEST(SharedStores, TwoProcessesKeepEveryRecordAndReadNoTornEntry) {
  std::string pattern = (fs::temp_directory_path() / "kiln-shared-stores-XXXXXX").string();
  const std::string dir = mkdtemp(pattern.data());
  const std::string cache_dir = dir + "/cache", db_path = dir + "/tuning.json";

  int gate[2];
  ASSERT_EQ(pipe(gate), 0);
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(gate[1]);
      char byte;
      while (read(gate[0], &byte, 1) > 0) {
      }  // every child starts when the parent closes the pipe
      int status = 5;
      try {
        status = hammer(p, cache_dir, db_path);
      } catch (const std::exception&) {
        status = 6;
      }
      _exit(status);
    }
    children.push_back(child);
  }
  close(gate[0]);
  close(gate[1]);
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: a tuning record was lost; 2: an empty compile; 3: a torn cache "
                                         "entry was read; 4: the disk cache was given up; 6: an exception";
  }

  TuningDb db = TuningDb::load(db_path);
  EXPECT_EQ(db.records().size(), static_cast<size_t>(kProcesses * kRecordsEach));
  for (int p = 0; p < kProcesses; ++p)
    for (int i = 0; i < kRecordsEach; ++i) EXPECT_NE(db.find(record(p, i).key), nullptr) << p << " " << i;
  CompileCache fresh(cache_dir);
  for (int s = 0; s < kSources; ++s) EXPECT_TRUE(fresh.compile(source(s), "scale.cu", {"sm_90a", {}}).from_cache);
  EXPECT_EQ(fresh.stats().disk_rejected, 0u);
  std::set<std::string> leftovers;  // temp files of the atomic writes
  for (const auto& f : fs::recursive_directory_iterator(dir))
    if (f.path().filename().string().find(".tmp") != std::string::npos ||
        f.path().filename().string().rfind(".", 0) == 0)
      leftovers.insert(f.path().string());
  EXPECT_TRUE(leftovers.empty()) << *leftovers.begin();
  fs::remove_all(dir);
}

}  // namespace
