// The NVRTC wrapper: real compiles for sm_90a and sm_80 (no GPU needed), the flags
// Kiln always passes, errors that carry the log and the failing source, and the
// arch chosen when none is given.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "ir/error.h"
#include "runtime/cuda_driver.h"
#include "runtime/nvrtc.h"

using namespace kiln::runtime;
namespace fs = std::filesystem;

namespace {

const char* kAxpySource = R"(
#include <cuda_fp16.h>
extern "C" __global__ void axpy(float a, const float* x, const float* y, float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
)";

// Sets (or unsets, with nullopt) an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

private:
  const char* name_;
  std::optional<std::string> old_;
};

class TempDir {
public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "kiln-nvrtc-test-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The message of the kiln::Error that `body` throws, or a failure.
template <typename F>
std::string error_of(F body) {
  try {
    body();
  } catch (const kiln::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a kiln::Error";
  return "";
}

bool is_elf(const std::vector<char>& image) {
  return image.size() > 4 && image[0] == 0x7f && image[1] == 'E' && image[2] == 'L' && image[3] == 'F';
}

}  // namespace

TEST(Nvrtc, CompilesForSm90aToCubinAndPtx) {
  CompileResult result = compile_cuda(kAxpySource, "axpy.cu", {.arch = "sm_90a", .extra_flags = {}});
  EXPECT_TRUE(is_elf(result.cubin));
  EXPECT_NE(result.ptx.find(".entry axpy"), std::string::npos);
  EXPECT_NE(result.ptx.find(".target sm_90a"), std::string::npos);
  EXPECT_FALSE(result.from_cache);
  EXPECT_GT(result.compile_ms, 0.0);
}

TEST(Nvrtc, CompilesForSm80) {
  CompileResult result = compile_cuda(kAxpySource, "axpy.cu", {.arch = "sm_80", .extra_flags = {}});
  EXPECT_TRUE(is_elf(result.cubin));
  EXPECT_NE(result.ptx.find(".entry axpy"), std::string::npos);
  EXPECT_NE(result.ptx.find(".target sm_80"), std::string::npos);
}

TEST(Nvrtc, VirtualArchGivesPtxWithoutCubin) {
  CompileResult result = compile_cuda(kAxpySource, "axpy.cu", {.arch = "compute_90", .extra_flags = {}});
  EXPECT_TRUE(result.cubin.empty());
  EXPECT_NE(result.ptx.find(".entry axpy"), std::string::npos);
}

// Why the device's compile target on a 9.0 part is sm_90a: wgmma exists only there.
TEST(Nvrtc, WgmmaNeedsSm90a) {
  TempDir cache;
  ScopedEnv cache_env("KILN_CACHE_DIR", cache.path());
  ScopedEnv dump_env("KILN_DUMP_DIR", std::nullopt);
  const char* source = R"(
extern "C" __global__ void fence(float* out) {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  out[threadIdx.x] = 1.0f;
}
)";
  EXPECT_FALSE(compile_cuda(source, "fence.cu", {.arch = "sm_90a", .extra_flags = {}}).cubin.empty());
  std::string message = error_of([&] { compile_cuda(source, "fence.cu", {.arch = "sm_90", .extra_flags = {}}); });
  EXPECT_NE(message.find("wgmma"), std::string::npos) << message;
}

TEST(Nvrtc, ExtraFlagsReachTheCompiler) {
  const char* source = R"(
#ifndef KILN_TEST_WIDTH
#error KILN_TEST_WIDTH is not defined
#endif
extern "C" __global__ void k(float* out) { out[0] = KILN_TEST_WIDTH; }
)";
  CompileResult result = compile_cuda(source, "k.cu", {.arch = "sm_90a", .extra_flags = {"-DKILN_TEST_WIDTH=4"}});
  EXPECT_FALSE(result.cubin.empty());
}

TEST(Nvrtc, FlagsHoldKilnsDefaultsAndNoFastMath) {
  auto flags = nvrtc_flags("sm_90a", {.arch = "", .extra_flags = {"-DX=1"}});
  auto has = [&](const std::string& flag) { return std::find(flags.begin(), flags.end(), flag) != flags.end(); };
  EXPECT_TRUE(has("-arch=sm_90a"));
  EXPECT_TRUE(has("-std=c++17"));
  EXPECT_TRUE(has("-default-device"));
  EXPECT_TRUE(has("-lineinfo"));
  EXPECT_TRUE(has("--include-path=" + cuda_include_dir()));
  EXPECT_FALSE(has("--use_fast_math"));
  EXPECT_EQ(flags.back(), "-DX=1");
}

TEST(Nvrtc, SyntaxErrorCarriesLogAndWritesSourceUnderCacheDir) {
  TempDir cache;
  ScopedEnv cache_env("KILN_CACHE_DIR", cache.path());
  ScopedEnv dump_env("KILN_DUMP_DIR", std::nullopt);
  const std::string source = "extern \"C\" __global__ void broken(float* p) { p[0] = undeclared_thing; }\n";
  std::string message = error_of([&] { compile_cuda(source, "broken.cu", {.arch = "sm_90a", .extra_flags = {}}); });
  EXPECT_NE(message.find("broken.cu"), std::string::npos) << message;
  EXPECT_NE(message.find("undeclared_thing"), std::string::npos) << message;  // from NVRTC's log
  EXPECT_NE(message.find("sm_90a"), std::string::npos) << message;

  size_t at = message.find("source: ");
  ASSERT_NE(at, std::string::npos) << message;
  std::string path = message.substr(at + 8, message.find('\n', at) - at - 8);
  EXPECT_EQ(path.rfind(cache.path(), 0), 0u) << path;
  EXPECT_EQ(read_file(path), source);
}

TEST(Nvrtc, SyntaxErrorWritesSourceIntoDumpDir) {
  TempDir dump;
  ScopedEnv dump_env("KILN_DUMP_DIR", dump.path());
  const std::string source = "extern \"C\" __global__ void broken(float* p) { p[0] = ; }\n";
  std::string message = error_of([&] { compile_cuda(source, "broken_kernel", {.arch = "sm_80", .extra_flags = {}}); });
  std::string expected_path = dump.path() + "/broken_kernel.cu";
  EXPECT_NE(message.find("source: " + expected_path), std::string::npos) << message;
  EXPECT_EQ(read_file(expected_path), source);
}

TEST(Nvrtc, BadArchIsAnErrorNamingIt) {
  TempDir cache;
  ScopedEnv cache_env("KILN_CACHE_DIR", cache.path());
  std::string message = error_of([&] { compile_cuda(kAxpySource, "axpy.cu", {.arch = "sm_1", .extra_flags = {}}); });
  EXPECT_NE(message.find("sm_1"), std::string::npos) << message;
}

TEST(Nvrtc, DefaultArchComesFromKilnArch) {
  ScopedEnv arch_env("KILN_ARCH", "sm_80");
  EXPECT_EQ(default_arch(), "sm_80");
  CompileResult result = compile_cuda(kAxpySource, "axpy.cu", {});
  EXPECT_NE(result.ptx.find(".target sm_80"), std::string::npos);
}

TEST(Nvrtc, DefaultArchWithoutGpuOrKilnArchSaysWhatToDo) {
  ScopedEnv arch_env("KILN_ARCH", std::nullopt);
  if (gpu_available()) GTEST_SKIP() << "a GPU is present, so the device gives the arch";
  std::string message = error_of([] { default_arch(); });
  EXPECT_NE(message.find("no GPU found"), std::string::npos) << message;
  EXPECT_NE(message.find("KILN_ARCH"), std::string::npos) << message;
  EXPECT_NE(message.find("--arch"), std::string::npos) << message;
}

TEST(Nvrtc, IncludeDirFollowsCudaHome) {
  TempDir toolkit;
  fs::create_directories(toolkit.path() + "/include");
  std::ofstream(toolkit.path() + "/include/cuda_fp16.h") << "// stand-in\n";
  ScopedEnv home("CUDA_HOME", toolkit.path());
  EXPECT_EQ(cuda_include_dir(), toolkit.path() + "/include");
}

TEST(Nvrtc, IncludeDirSkipsACudaHomeWithoutHeaders) {
  TempDir empty;
  ScopedEnv home("CUDA_HOME", empty.path());
  ScopedEnv path("CUDA_PATH", std::nullopt);
  if (!fs::exists("/usr/local/cuda/include/cuda_fp16.h")) GTEST_SKIP() << "no toolkit at /usr/local/cuda";
  EXPECT_EQ(cuda_include_dir(), "/usr/local/cuda/include");
}

TEST(Nvrtc, VersionMatchesTheToolkitsMajorVersion) {
  int version = nvrtc_version();
  EXPECT_EQ(version / 1000, CUDA_VERSION / 1000);  // cuda.h's CUDA_VERSION comes with the same toolkit
  EXPECT_EQ(version % 10, 0);
}
