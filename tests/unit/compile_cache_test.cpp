// The compile cache: hits in memory and on disk, a miss for every change to the
// key's inputs, damaged entries recompiled and rewritten, concurrent writers, and a
// folder that cannot be used. Each test gets a fresh cache folder.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ir/error.h"
#include "runtime/compile_cache.h"

using namespace kiln::runtime;
namespace fs = std::filesystem;

namespace {

std::string axpy_source(const std::string& kernel_name = "axpy") {
  return "extern \"C\" __global__ void " + kernel_name +
         "(float a, const float* x, float* y, int n) {\n"
         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (i < n) y[i] = a * x[i] + y[i];\n"
         "}\n";
}

const CompileOptions kSm90a = {.arch = "sm_90a", .extra_flags = {}};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

class CompileCacheTest : public testing::Test {
protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kiln-cache-test-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The entry file for the axpy kernel under `options`.
  std::string entry_path(const CompileCache& cache, const CompileOptions& options = kSm90a) {
    return cache.entry_stem(cache.key(axpy_source(), "axpy.cu", options)) + ".entry";
  }

  // Damages the stored axpy entry with `damage`, then checks that a fresh cache
  // object recompiles (never loads it) and leaves a valid entry behind.
  template <typename Damage>
  void expect_damaged_entry_recompiled(Damage damage) {
    CompileResult original = CompileCache(dir_).compile(axpy_source(), "axpy.cu", kSm90a);
    CompileCache cache(dir_);
    std::string path = entry_path(cache);
    std::string bytes = read_file(path);
    damage(bytes);
    write_file(path, bytes);

    CompileResult again = cache.compile(axpy_source(), "axpy.cu", kSm90a);
    EXPECT_FALSE(again.from_cache);
    EXPECT_EQ(again.cubin, original.cubin);
    EXPECT_EQ(cache.stats().disk_rejected, 1u);
    EXPECT_EQ(cache.stats().disk_hits, 0u);
    EXPECT_EQ(cache.stats().misses, 1u);

    auto rewritten = read_cache_entry(path, cache.key(axpy_source(), "axpy.cu", kSm90a));
    ASSERT_TRUE(rewritten.has_value());
    EXPECT_EQ(rewritten->cubin, original.cubin);
  }

  std::string dir_;
};

}  // namespace

TEST_F(CompileCacheTest, SecondCompileHitsMemory) {
  CompileCache cache(dir_);
  CompileResult first = cache.compile(axpy_source(), "axpy.cu", kSm90a);
  CompileResult second = cache.compile(axpy_source(), "axpy.cu", kSm90a);
  EXPECT_FALSE(first.from_cache);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_EQ(second.ptx, first.ptx);
  EXPECT_EQ(cache.stats().misses, 1u);
  EXPECT_EQ(cache.stats().memory_hits, 1u);
}

TEST_F(CompileCacheTest, FreshCacheObjectHitsDisk) {
  CompileResult first = CompileCache(dir_).compile(axpy_source(), "axpy.cu", kSm90a);
  CompileCache fresh(dir_);
  CompileResult second = fresh.compile(axpy_source(), "axpy.cu", kSm90a);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_EQ(second.ptx, first.ptx);
  EXPECT_EQ(second.log, first.log);
  EXPECT_EQ(fresh.stats().disk_hits, 1u);
  EXPECT_EQ(fresh.stats().misses, 0u);
  // Once read from disk, the next lookup is served from memory.
  fresh.compile(axpy_source(), "axpy.cu", kSm90a);
  EXPECT_EQ(fresh.stats().memory_hits, 1u);
}

TEST_F(CompileCacheTest, SourceAndPtxAreKeptBesideTheEntry) {
  CompileCache cache(dir_);
  CompileResult result = cache.compile(axpy_source(), "axpy.cu", kSm90a);
  std::string stem = cache.entry_stem(cache.key(axpy_source(), "axpy.cu", kSm90a));
  EXPECT_EQ(read_file(stem + ".cu"), axpy_source());
  EXPECT_EQ(read_file(stem + ".ptx"), result.ptx);
  EXPECT_EQ(stem.rfind(dir_ + "/kernels/", 0), 0u);
}

TEST_F(CompileCacheTest, ChangedSourceMisses) {
  CompileCache(dir_).compile(axpy_source(), "axpy.cu", kSm90a);
  CompileCache fresh(dir_);
  CompileResult other = fresh.compile(axpy_source("axpy2"), "axpy.cu", kSm90a);
  EXPECT_FALSE(other.from_cache);
  EXPECT_NE(other.ptx.find(".entry axpy2"), std::string::npos);
  EXPECT_EQ(fresh.stats().misses, 1u);
  EXPECT_EQ(fresh.stats().disk_hits, 0u);
}

TEST_F(CompileCacheTest, ChangedFlagMisses) {
  CompileCache cache(dir_);
  cache.compile(axpy_source(), "axpy.cu", kSm90a);
  CompileResult with_flag = cache.compile(axpy_source(), "axpy.cu", {.arch = "sm_90a", .extra_flags = {"-DUNUSED=1"}});
  EXPECT_FALSE(with_flag.from_cache);
  EXPECT_EQ(cache.stats().misses, 2u);
}

TEST_F(CompileCacheTest, ChangedArchMisses) {
  CompileCache cache(dir_);
  cache.compile(axpy_source(), "axpy.cu", kSm90a);
  CompileResult sm80 = cache.compile(axpy_source(), "axpy.cu", {.arch = "sm_80", .extra_flags = {}});
  EXPECT_FALSE(sm80.from_cache);
  EXPECT_NE(sm80.ptx.find(".target sm_80"), std::string::npos);
  EXPECT_EQ(cache.stats().misses, 2u);
}

TEST_F(CompileCacheTest, ChangedNvrtcVersionMisses) {
  int version = nvrtc_version();
  CompileCache(dir_, version).compile(axpy_source(), "axpy.cu", kSm90a);
  CompileCache newer(dir_, version + 10);
  CompileResult result = newer.compile(axpy_source(), "axpy.cu", kSm90a);
  EXPECT_FALSE(result.from_cache);
  EXPECT_EQ(newer.stats().misses, 1u);
  EXPECT_EQ(newer.stats().disk_hits, 0u);
}

TEST_F(CompileCacheTest, KeyDependsOnEveryInput) {
  std::string base = compile_cache_key("src", "name", "sm_90a", {"-a", "-b"}, 13000);
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(base, compile_cache_key("src", "name", "sm_90a", {"-a", "-b"}, 13000));
  EXPECT_NE(base, compile_cache_key("src2", "name", "sm_90a", {"-a", "-b"}, 13000));
  EXPECT_NE(base, compile_cache_key("src", "name2", "sm_90a", {"-a", "-b"}, 13000));
  EXPECT_NE(base, compile_cache_key("src", "name", "sm_80", {"-a", "-b"}, 13000));
  EXPECT_NE(base, compile_cache_key("src", "name", "sm_90a", {"-a"}, 13000));
  EXPECT_NE(base, compile_cache_key("src", "name", "sm_90a", {"-b", "-a"}, 13000));
  EXPECT_NE(base, compile_cache_key("src", "name", "sm_90a", {"-a", "-b"}, 13010));
  // Fields are kept apart: moving a character from one to the next changes the key.
  EXPECT_NE(compile_cache_key("bc", "a", "sm_90a", {}, 13000), compile_cache_key("c", "ab", "sm_90a", {}, 13000));
  EXPECT_NE(compile_cache_key("s", "n", "sm_90a", {"-a-b"}, 13000),
            compile_cache_key("s", "n", "sm_90a", {"-a", "-b"}, 13000));
}

TEST_F(CompileCacheTest, FlippedPayloadByteIsRecompiled) {
  expect_damaged_entry_recompiled([](std::string& bytes) { bytes[bytes.size() / 2] ^= 0x20; });
}

TEST_F(CompileCacheTest, FlippedHeaderSizeIsRecompiled) {
  // Byte 76 is the lowest byte of the PTX size (after magic, version and key).
  expect_damaged_entry_recompiled([](std::string& bytes) { bytes[76] ^= 0x01; });
}

TEST_F(CompileCacheTest, TruncatedEntryIsRecompiled) {
  expect_damaged_entry_recompiled([](std::string& bytes) { bytes.resize(bytes.size() - 100); });
}

TEST_F(CompileCacheTest, EntryCutInsideItsHeaderIsRecompiled) {
  expect_damaged_entry_recompiled([](std::string& bytes) { bytes.resize(40); });
}

TEST_F(CompileCacheTest, GarbageEntryIsRecompiled) {
  expect_damaged_entry_recompiled([](std::string& bytes) {
    std::string garbage;
    for (size_t i = 0; i < bytes.size(); ++i) garbage += static_cast<char>((i * 7919 + 13) & 0xff);
    bytes = garbage;
  });
}

TEST_F(CompileCacheTest, EntryOfAnotherKeyIsNotLoaded) {
  CompileCache cache(dir_);
  cache.compile(axpy_source(), "axpy.cu", kSm90a);
  std::string other_key = cache.key(axpy_source("other"), "axpy.cu", kSm90a);
  fs::copy_file(entry_path(cache), cache.entry_stem(other_key) + ".entry");
  std::string why;
  EXPECT_FALSE(read_cache_entry(cache.entry_stem(other_key) + ".entry", other_key, &why).has_value());
  EXPECT_NE(why.find("another key"), std::string::npos) << why;

  CompileCache fresh(dir_);
  CompileResult other = fresh.compile(axpy_source("other"), "axpy.cu", kSm90a);
  EXPECT_NE(other.ptx.find(".entry other"), std::string::npos);
  EXPECT_EQ(fresh.stats().disk_rejected, 1u);
}

TEST_F(CompileCacheTest, MissingEntryIsNotDamage) {
  std::string why;
  EXPECT_FALSE(read_cache_entry(dir_ + "/nothing.entry", std::string(64, 'a'), &why).has_value());
  EXPECT_TRUE(why.empty()) << why;
}

TEST_F(CompileCacheTest, TwoProcessesWritingOneEntryBothSucceed) {
  CompileCache probe(dir_);
  const std::string key = probe.key(axpy_source(), "axpy.cu", kSm90a);
  const std::string path = entry_path(probe);

  int start_gate[2];
  ASSERT_EQ(pipe(start_gate), 0);
  std::vector<pid_t> children;
  for (int i = 0; i < 2; ++i) {
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      // Both children wait here until the parent closes the pipe, then race.
      close(start_gate[1]);
      char byte;
      while (read(start_gate[0], &byte, 1) > 0) {
      }
      int status = 0;
      try {
        CompileCache cache(dir_);
        CompileResult result = cache.compile(axpy_source(), "axpy.cu", kSm90a);
        // Keep rewriting the entry while reading it back: a reader must only ever
        // see a whole entry, whoever wrote it last.
        for (int round = 0; round < 100 && status == 0; ++round) {
          write_cache_entry(path, key, result);
          auto back = read_cache_entry(path, key);
          if (!back || back->cubin != result.cubin) status = 1;
        }
        if (!cache.on_disk()) status = 3;
      } catch (const std::exception&) {
        status = 2;
      }
      _exit(status);
    }
    children.push_back(child);
  }
  close(start_gate[0]);
  close(start_gate[1]);
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: a torn entry was read; 2: an exception; 3: the disk was given up";
  }

  CompileCache fresh(dir_);
  CompileResult result = fresh.compile(axpy_source(), "axpy.cu", kSm90a);
  EXPECT_TRUE(result.from_cache);
  EXPECT_EQ(fresh.stats().disk_hits, 1u);
  for (const auto& file : fs::directory_iterator(dir_ + "/kernels"))
    EXPECT_NE(file.path().filename().string()[0], '.') << "temp file left behind: " << file.path();
}

TEST_F(CompileCacheTest, UnusableFolderFallsBackToMemory) {
  // A folder below a regular file can never be created, whoever runs the test (root too).
  write_file(dir_ + "/not-a-folder", "x");
  testing::internal::CaptureStderr();
  CompileCache cache(dir_ + "/not-a-folder/cache");
  std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(cache.on_disk());
  EXPECT_NE(warning.find("memory only"), std::string::npos) << warning;

  CompileResult first = cache.compile(axpy_source(), "axpy.cu", kSm90a);
  CompileResult second = cache.compile(axpy_source(), "axpy.cu", kSm90a);
  EXPECT_FALSE(first.cubin.empty());
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(cache.stats().memory_hits, 1u);
}

TEST_F(CompileCacheTest, FolderThatBreaksLaterFallsBackToMemory) {
  CompileCache cache(dir_);
  ASSERT_TRUE(cache.on_disk());
  fs::remove_all(dir_ + "/kernels");
  write_file(dir_ + "/kernels", "now a file");
  testing::internal::CaptureStderr();
  CompileResult result = cache.compile(axpy_source(), "axpy.cu", kSm90a);
  std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(result.cubin.empty());
  EXPECT_FALSE(cache.on_disk());
  EXPECT_NE(warning.find("memory only"), std::string::npos) << warning;
}

TEST_F(CompileCacheTest, ThreadsCompileAtOnce) {
  CompileCache cache(dir_);
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::string name = "axpy" + std::to_string(t);
      CompileResult first = cache.compile(axpy_source(name), name + ".cu", kSm90a);
      CompileResult second = cache.compile(axpy_source(name), name + ".cu", kSm90a);
      ok[t] = !first.from_cache && second.from_cache && first.ptx.find(".entry " + name) != std::string::npos;
    });
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[t]) << "thread " << t;
  EXPECT_EQ(cache.stats().misses, 4u);
  EXPECT_EQ(cache.stats().memory_hits, 4u);
}

TEST_F(CompileCacheTest, CompileErrorsPassThroughAndAreNotCached) {
  const char* old = getenv("KILN_CACHE_DIR");
  std::string saved = old ? old : "";
  setenv("KILN_CACHE_DIR", dir_.c_str(), 1);  // where the failing source is written
  CompileCache cache(dir_);
  EXPECT_THROW(cache.compile("this is not CUDA", "bad.cu", kSm90a), kiln::Error);
  EXPECT_THROW(cache.compile("this is not CUDA", "bad.cu", kSm90a), kiln::Error);
  EXPECT_EQ(cache.stats().misses, 0u);
  EXPECT_EQ(cache.stats().memory_hits, 0u);
  if (old)
    setenv("KILN_CACHE_DIR", saved.c_str(), 1);
  else
    unsetenv("KILN_CACHE_DIR");
}
