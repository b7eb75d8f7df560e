// The reference interpreter and HostTensor's conversions on several threads: results
// are bit-identical to one thread's, parallel_for covers every index once, and
// random_tensor is counter-based, deterministic and never zero.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/parallel.h"
#include "ir/parser.h"
#include "ir/tensor.h"

namespace kiln {
namespace {

// Sets the thread count for one scope and restores the default after it.
class ThreadCount {
public:
  explicit ThreadCount(int threads) { ir::set_thread_count(threads); }
  ~ThreadCount() { ir::set_thread_count(0); }
};

// Odd, so that chunks and rows do not line up.
constexpr int kManyThreads = 7;

std::vector<HostTensor> evaluate_with(int threads, const ir::Graph& g, const std::vector<HostTensor>& inputs) {
  ThreadCount scope(threads);
  return ir::evaluate(g, inputs);
}

// Bit equality, so that NaN matches NaN and -0 does not match +0.
void expect_same_bits(const HostTensor& want, const HostTensor& got, const std::string& what) {
  ASSERT_EQ(want.type, got.type) << what;
  ASSERT_EQ(want.values.size(), got.values.size()) << what;
  EXPECT_EQ(std::memcmp(want.values.data(), got.values.data(), want.values.size() * sizeof(double)), 0)
      << what << " differs between 1 and " << kManyThreads << " threads";
}

// Evaluates `text` on random inputs with one thread and with many; the outputs must match bit for bit.
void expect_thread_count_invariant(const std::string& text) {
  ir::Graph g = ir::parse(text);
  std::vector<HostTensor> inputs = ir::random_inputs(g, 5);
  std::vector<HostTensor> serial = evaluate_with(1, g, inputs);
  std::vector<HostTensor> parallel = evaluate_with(kManyThreads, g, inputs);
  ASSERT_EQ(serial.size(), parallel.size());
  for (size_t i = 0; i < serial.size(); ++i) expect_same_bits(serial[i], parallel[i], "output " + std::to_string(i));
}

TEST(ParallelFor, CoversEveryIndexOnce) {
  ThreadCount scope(kManyThreads);
  for (int64_t n : {1, 2, 1000, 65537, 300001}) {
    std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
    ir::parallel_for(n, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) seen[static_cast<size_t>(i)]++;
    });
    int64_t wrong = 0;
    for (auto& s : seen) wrong += s.load() != 1;
    EXPECT_EQ(wrong, 0) << "n = " << n;
  }
}

TEST(ParallelFor, SplitsLargeJobsIntoSeveralChunks) {
  ThreadCount scope(4);
  std::atomic<int> chunks{0};
  ir::parallel_for(1 << 20, 1, [&](int64_t, int64_t) { chunks++; });
  EXPECT_GT(chunks.load(), 1);
}

TEST(ParallelFor, RunsSmallJobsAsOneChunk) {
  ThreadCount scope(4);
  std::atomic<int> chunks{0};
  ir::parallel_for(100, 1, [&](int64_t, int64_t) { chunks++; });
  EXPECT_EQ(chunks.load(), 1);
}

TEST(ParallelFor, RethrowsAnExceptionFromAChunk) {
  ThreadCount scope(kManyThreads);
  auto run = [] {
    ir::parallel_for(1 << 20, 1, [](int64_t begin, int64_t end) {
      if (begin <= 500000 && 500000 < end) throw Error("chunk failed");
    });
  };
  EXPECT_THROW(run(), Error);
}

TEST(ParallelFor, RejectsANegativeThreadCount) { EXPECT_THROW(ir::set_thread_count(-1), Error); }

TEST(InterpreterParallel, ElementwiseWithBroadcastMatchesOneThread) {
  expect_thread_count_invariant(R"(
func @f(%x: f32[301,257], %r: f32[257], %c: f32[301,1]) -> (f32[301,257], f16[301,257]) {
  %a = add %x, %r : f32[301,257]
  %e = exp %a : f32[301,257]
  %m = mul %e, %c : f32[301,257]
  %h = cast %m : f16[301,257]
  return %m, %h
}
)");
}

TEST(InterpreterParallel, SelectAndCompareMatchOneThread) {
  expect_thread_count_invariant(R"(
func @f(%x: bf16[3,201,131], %y: bf16[201,1]) -> (bf16[3,201,131]) {
  %p = lt %x, %y : i1[3,201,131]
  %s = select %p, %x, %y : bf16[3,201,131]
  return %s
}
)");
}

TEST(InterpreterParallel, ViewsAndIotaMatchOneThread) {
  expect_thread_count_invariant(R"(
func @f(%x: f32[37,411,5], %w: f32[411,1]) -> (f32[5,37,411], f32[7,411,5], f16[301,3,257]) {
  %t = transpose %x {perm = [2, 0, 1]} : f32[5,37,411]
  %b = broadcast %w : f32[7,411,5]
  %i = iota {axis = 0} : f16[301,3,257]
  return %t, %b, %i
}
)");
}

TEST(InterpreterParallel, ReductionsOverEachAxisMatchOneThread) {
  expect_thread_count_invariant(R"(
func @f(%x: f32[3,301,257]) -> (f32[3,301], f32[3,257], f32[301], f32[], f32[3,301,1], f32[3,257], f32[3,301]) {
  %rows = sum %x {axis = [2]} : f32[3,301]
  %cols = mean %x {axis = [1]} : f32[3,257]
  %outer = max %x {axis = [0, 2]} : f32[301]
  %all = sum %x {axis = [0, 1, 2]} : f32[]
  %keep = min %x {axis = [2], keepdim = true} : f32[3,301,1]
  %lse = logsumexp %x {axis = [1]} : f32[3,257]
  %var = var %x {axis = [2]} : f32[3,301]
  return %rows, %cols, %outer, %all, %keep, %lse, %var
}
)");
}

TEST(InterpreterParallel, CompositesMatchOneThread) {
  expect_thread_count_invariant(R"(
func @f(%x: f16[600,130], %w: f16[130], %b: f16[130], %y: f32[3,700,40])
    -> (f16[600,130], f16[600,130], f16[600,130], f16[600,130], f32[3,700,40]) {
  %s = softmax %x {axis = -1} : f16[600,130]
  %l = log_softmax %x {axis = 0} : f16[600,130]
  %n = layer_norm %x, %w, %b {axis = -1, eps = 1e-05} : f16[600,130]
  %r = rms_norm %x, %w {axis = -1, eps = 1e-06} : f16[600,130]
  %c = softmax %y {axis = 1} : f32[3,700,40]
  return %s, %l, %n, %r, %c
}
)");
}

TEST(InterpreterParallel, MatmulAndAttentionMatchOneThread) {
  expect_thread_count_invariant(R"(
func @f(%a: f32[3,70,64], %b: f32[64,90], %q: f32[2,90,32], %k: f32[2,90,32], %v: f32[2,90,32])
    -> (f32[3,70,90], f32[2,90,32]) {
  %c = matmul %a, %b : f32[3,70,90]
  %o = attention %q, %k, %v {scale = 0.17, causal = true} : f32[2,90,32]
  return %c, %o
}
)");
}

// A column sum on many threads against a plain loop that adds the rows in order.
TEST(InterpreterParallel, ColumnSumAddsRowsInOrder) {
  const int64_t rows = 500, cols = 300;
  ir::Graph g = ir::parse(R"(
func @f(%x: f32[500,300]) -> (f32[300]) {
  %s = sum %x {axis = [0]} : f32[300]
  return %s
}
)");
  std::vector<HostTensor> inputs = ir::random_inputs(g, 9);
  HostTensor got = evaluate_with(kManyThreads, g, inputs)[0];
  const std::vector<double>& x = inputs[0].values;
  for (int64_t c = 0; c < cols; ++c) {
    double acc = 0;
    for (int64_t r = 0; r < rows; ++r) acc += x[static_cast<size_t>(r * cols + c)];
    ASSERT_EQ(got.values[static_cast<size_t>(c)], round_to(DType::f32, acc)) << "column " << c;
  }
}

TEST(RandomTensor, SameSeedGivesSameValues) {
  const TensorType t{DType::f32, {1000}};
  EXPECT_EQ(random_tensor(t, 3).values, random_tensor(t, 3).values);
}

TEST(RandomTensor, DifferentSeedsGiveDifferentValues) {
  const TensorType t{DType::f32, {1000}};
  EXPECT_NE(random_tensor(t, 3).values, random_tensor(t, 4).values);
}

TEST(RandomTensor, ValuesDoNotDependOnThreadCount) {
  for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i1}) {
    const TensorType t{dt, {3, 100003}};
    HostTensor serial, parallel;
    {
      ThreadCount scope(1);
      serial = random_tensor(t, 11);
    }
    {
      ThreadCount scope(kManyThreads);
      parallel = random_tensor(t, 11);
    }
    expect_same_bits(serial, parallel, std::string(dtype_name(dt)));
  }
}

// A prefix of a bigger tensor holds the same values: each element depends on its index only.
TEST(RandomTensor, ElementDependsOnItsIndexOnly) {
  HostTensor small = random_tensor({DType::f32, {100}}, 21);
  HostTensor large = random_tensor({DType::f32, {200000}}, 21);
  for (size_t i = 0; i < small.values.size(); ++i) ASSERT_EQ(small.values[i], large.values[i]) << "element " << i;
}

TEST(RandomTensor, FloatsAreNeverZeroAndLieInTheirRange) {
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    HostTensor t = random_tensor({dt, {200000}}, 5);
    int64_t negative = 0;
    for (double v : t.values) {
      ASSERT_GE(std::abs(v), round_to(dt, 0.1)) << dtype_name(dt);
      ASSERT_LE(std::abs(v), 1.0) << dtype_name(dt);
      negative += v < 0;
    }
    // Signs are fair coin flips: 100000 +- 5 standard deviations (~224 each).
    EXPECT_NEAR(static_cast<double>(negative), 100000.0, 1200.0) << dtype_name(dt);
  }
}

TEST(RandomTensor, MagnitudesSpreadOverTheirRange) {
  HostTensor t = random_tensor({DType::f32, {200000}}, 6);
  int64_t low = 0;  // |v| in [0.1, 0.55): half of the range
  for (double v : t.values) low += std::abs(v) < 0.55;
  EXPECT_NEAR(static_cast<double>(low), 100000.0, 1200.0);
}

TEST(RandomTensor, IntegersAreNonzeroDigitsOfBothSigns) {
  HostTensor t = random_tensor({DType::i32, {90000}}, 7);
  std::vector<int64_t> count(19, 0);  // values -9..9
  for (double v : t.values) {
    ASSERT_EQ(v, static_cast<double>(static_cast<int>(v)));
    ASSERT_GE(std::abs(v), 1.0);
    ASSERT_LE(std::abs(v), 9.0);
    count[static_cast<size_t>(v + 9)]++;
  }
  for (int v = -9; v <= 9; ++v) {
    if (v == 0) continue;
    EXPECT_NEAR(static_cast<double>(count[static_cast<size_t>(v + 9)]), 5000.0, 400.0) << "value " << v;
  }
}

TEST(RandomTensor, BooleansAreZeroOrOneInEqualShare) {
  HostTensor t = random_tensor({DType::i1, {100000}}, 8);
  int64_t ones = 0;
  for (double v : t.values) {
    ASSERT_TRUE(v == 0.0 || v == 1.0) << v;
    ones += v == 1.0;
  }
  EXPECT_NEAR(static_cast<double>(ones), 50000.0, 1200.0);
}

TEST(HostTensorParallel, BytesRoundTripAndMatchOneThread) {
  for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i1}) {
    const HostTensor t = random_tensor({dt, {70001, 3}}, 12);
    std::vector<std::byte> serial_bytes, parallel_bytes;
    {
      ThreadCount scope(1);
      serial_bytes = t.to_bytes();
    }
    HostTensor back;
    {
      ThreadCount scope(kManyThreads);
      parallel_bytes = t.to_bytes();
      back = HostTensor::from_bytes(t.type, parallel_bytes.data());
    }
    EXPECT_EQ(serial_bytes, parallel_bytes) << dtype_name(dt);
    expect_same_bits(t, back, std::string(dtype_name(dt)) + " after a round trip");
  }
}

TEST(HostTensorParallel, RoundingMatchesOneThread) {
  std::vector<double> raw(200000);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<double>(i) * 1.0000001 - 1e5 + 1.0 / 3;
  for (DType dt : {DType::f16, DType::bf16, DType::i32}) {
    HostTensor serial, parallel;
    {
      ThreadCount scope(1);
      serial = HostTensor({dt, {200000}}, raw);
    }
    {
      ThreadCount scope(kManyThreads);
      parallel = HostTensor({dt, {200000}}, raw);
    }
    expect_same_bits(serial, parallel, std::string(dtype_name(dt)));
    for (size_t i = 0; i < raw.size(); i += 997) ASSERT_EQ(parallel.values[i], round_to(dt, raw[i])) << i;
  }
}

}  // namespace
}  // namespace kiln
