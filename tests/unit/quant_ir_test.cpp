// The quantised-weight dtypes and the dequant op: i8 / i4 names, sizes, rounding and
// packing (two i4 elements a byte, the even one in the low nibble), random values that
// are never zero, .npy files, dequant's shape and dtype rules with clear errors, the
// rules that keep i8 / i4 out of arithmetic, the reference's exact values, and the DSL.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <string>

#include "frontend/kiln.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "runtime/npy.h"

namespace kiln {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(QuantDType, NamesSizesAndRounding) {
  EXPECT_EQ(dtype_name(DType::i8), "i8");
  EXPECT_EQ(dtype_name(DType::i4), "i4");
  EXPECT_EQ(parse_dtype("i4"), DType::i4);
  EXPECT_EQ(dtype_bits(DType::i4), 4);
  EXPECT_EQ(dtype_bits(DType::i8), 8);
  EXPECT_EQ((TensorType{DType::i4, {3, 6}}.bytes()), 9);
  EXPECT_EQ((TensorType{DType::i4, {3}}.bytes()), 2);  // an odd count rounds up to whole bytes
  EXPECT_TRUE(is_storage_only(DType::i4));
  EXPECT_FALSE(is_integer(DType::i8));
  EXPECT_EQ(round_to(DType::i4, 9.5), 7);
  EXPECT_EQ(round_to(DType::i4, -12), -8);
  EXPECT_EQ(round_to(DType::i8, -200.7), -128);
  EXPECT_EQ(round_to(DType::i8, -3.9), -3);
  EXPECT_FALSE(std::signbit(round_to(DType::i8, -0.5)));
}

TEST(QuantDType, I4PacksTwoElementsAByteLowNibbleFirst) {
  HostTensor t(TensorType{DType::i4, {5}}, {1, -2, 7, -8, 3});
  std::vector<std::byte> bytes = t.to_bytes();
  ASSERT_EQ(bytes.size(), 3u);
  EXPECT_EQ(static_cast<unsigned>(bytes[0]), 0xe1u);  // -2 = 0xe high, 1 low
  EXPECT_EQ(static_cast<unsigned>(bytes[1]), 0x87u);  // -8 = 0x8 high, 7 low
  EXPECT_EQ(static_cast<unsigned>(bytes[2]), 0x03u);  // the last byte's high nibble is padding
  HostTensor back = HostTensor::from_bytes(t.type, bytes.data());
  EXPECT_EQ(back.values, t.values);
  HostTensor i8(TensorType{DType::i8, {3}}, {-128, 127, -1});
  EXPECT_EQ(HostTensor::from_bytes(i8.type, i8.to_bytes().data()).values, i8.values);
}

TEST(QuantDType, RandomWeightsCoverTheRangeAndAreNeverZero) {
  HostTensor w4 = random_tensor(TensorType{DType::i4, {64, 64}}, 3);
  HostTensor w8 = random_tensor(TensorType{DType::i8, {64, 64}}, 3);
  double lo4 = 0, hi4 = 0, lo8 = 0, hi8 = 0;
  for (double v : w4.values) {
    EXPECT_NE(v, 0);
    lo4 = std::min(lo4, v);
    hi4 = std::max(hi4, v);
  }
  for (double v : w8.values) {
    EXPECT_NE(v, 0);
    lo8 = std::min(lo8, v);
    hi8 = std::max(hi8, v);
  }
  EXPECT_EQ(lo4, -8);
  EXPECT_EQ(hi4, 7);
  EXPECT_LE(lo8, -120);
  EXPECT_GE(hi8, 120);
}

TEST(QuantDType, NpyStoresI4AsInt8AndChecksTheRange) {
  const std::string path = (std::filesystem::temp_directory_path() / "kiln_quant_i4.npy").string();
  HostTensor t(TensorType{DType::i4, {2, 4}}, {1, -8, 7, 2, -1, 3, 4, -5});
  runtime::write_npy(path, t);
  runtime::NpyArray a = runtime::read_npy_file(path);
  EXPECT_EQ(a.descr, "|i1");
  EXPECT_EQ(a.data.size(), 8u);  // one element a byte
  EXPECT_EQ(runtime::read_npy(path, t.type, "input 0 %w").values, t.values);
  HostTensor wide(TensorType{DType::i8, {2, 4}}, {1, -8, 7, 2, -1, 3, 4, 9});
  runtime::write_npy(path, wide);
  EXPECT_TRUE(contains(error_of([&] { runtime::read_npy(path, t.type, "input 0 %w"); }), "i4 elements are -8 to 7"));
  std::filesystem::remove(path);
}

const char* kDequantText = R"(func @q(%x: f16[3,64], %w: i4[5,64], %s: f16[5,2]) -> (f16[3,5]) {
  %wd = dequant %w, %s {group = 32} : f16[5,64]
  %y = matmul %x, %wd {transpose_b = true} : f16[3,5]
  return %y
})";

TEST(Dequant, ParsesPrintsAndTypes) {
  ir::Graph g = ir::parse(kDequantText);
  const ir::Node* d = g.nodes()[0];
  EXPECT_EQ(d->op, ir::OpKind::Dequant);
  EXPECT_EQ(d->result->type, (TensorType{DType::f16, {5, 64}}));
  EXPECT_EQ(d->attrs.get_int("group"), 32);
}

TEST(Dequant, ShapeAndDtypeRulesSayWhatIsWrong) {
  auto parse_error = [](const std::string& body, const std::string& inputs) {
    return error_of([&] {
      ir::parse("func @q(" + inputs + ") -> (f16[4,64]) {\n  %d = " + body + "\n  return %d\n}");
    });
  };
  const std::string in = "%w: i4[4,64], %s: f16[4,2]";
  EXPECT_TRUE(contains(parse_error("dequant %w, %s {group = 48} : f16[4,64]", in), "group = 48 must be positive and divide"));
  EXPECT_TRUE(contains(parse_error("dequant %w, %s {group = 16} : f16[4,64]", in), "the scales must have shape [4,4]"));
  EXPECT_TRUE(contains(parse_error("dequant %s, %s {group = 1} : f16[4,2]", "%s: f16[4,2]"),
                       "the weights must be i8 or i4"));
  EXPECT_TRUE(contains(parse_error("dequant %w {group = 32} : f16[4,64]", in), "expects 2 or 3 operands"));
  EXPECT_TRUE(contains(parse_error("dequant %w, %s, %z {group = 32} : f16[4,64]", in + ", %z: f32[4,2]"),
                       "the zero points must have the scales' dtype (f16) or the weights' (i4)"));
  EXPECT_TRUE(contains(parse_error("dequant %w, %s {group} : f16[4,64]", in), "group"));
  EXPECT_TRUE(contains(parse_error("add %w, %w : i4[4,64]", in), "i4 is a storage type for quantised weights"));
  EXPECT_TRUE(contains(parse_error("cast %s : i4[4,2]", in), "Kiln reads i4 weights but does not write them"));
  EXPECT_TRUE(contains(error_of([] { ir::parse("func @q(%w: i4[4,63]) -> (i4[4,63]) {\n  return %w\n}"); }),
                       "whose size must be even"));
  // The parser points at the line and column of the bad node.
  EXPECT_TRUE(contains(parse_error("dequant %w, %s {group = 48} : f16[4,64]", in), "<input>:2:"));
}

TEST(Dequant, ReferenceIsExact) {
  ir::Graph g = ir::parse(R"(func @q(%w: i4[2,4], %s: f16[2,2], %z: f16[2,2]) -> (f16[2,4], f32[2,4]) {
  %d = dequant %w, %s, %z {group = 2} : f16[2,4]
  %w8 = cast %w : i8[2,4]
  %f = cast %w8 : f32[2,4]
  return %d, %f
})");
  std::vector<HostTensor> in = {HostTensor(TensorType{DType::i4, {2, 4}}, {1, -8, 7, 2, -1, 3, 4, -5}),
                                HostTensor(TensorType{DType::f16, {2, 2}}, {0.5, 2, 0.25, -1}),
                                HostTensor(TensorType{DType::f16, {2, 2}}, {1, 0, -2, 0.5})};
  std::vector<HostTensor> out = ir::evaluate(g, in);
  EXPECT_EQ(out[0].values, (std::vector<double>{0, -4.5, 14, 4, 0.25, 1.25, -3.5, 5.5}));
  EXPECT_EQ(out[1].values, in[0].values);
}

TEST(Dequant, DslBuildsTheOpAndChecksIt) {
  kiln::Graph g("q");
  auto w = g.input("w", i8, {16, 256});
  auto s = g.input("s", bf16, {16, 2});
  auto z = g.input("z", i8, {16, 2});
  auto d = kiln::dequant(w, s, z, 128);
  EXPECT_EQ(d.type(), (TensorType{DType::bf16, {16, 256}}));
  EXPECT_TRUE(contains(error_of([&] { kiln::dequant(w, s, 100); }), "dequant"));
}

}  // namespace
}  // namespace kiln
