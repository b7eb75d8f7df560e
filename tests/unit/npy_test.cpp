// The .npy reader and writer: round trips per dtype, files as numpy.save writes them,
// and the errors that name the input, the expected and the stored dtype and shape.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ir/error.h"
#include "runtime/npy.h"

using kiln::DType;
using kiln::HostTensor;
using kiln::TensorType;
using namespace kiln::runtime;

namespace {

std::string temp_path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / "kiln_npy_test";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// A .npy file as numpy.save writes it: format 1.0, header padded to 64 bytes.
std::string npy_bytes(const std::string& dict, const std::string& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Npy, RoundTripsEveryDtype) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i1}) {
    TensorType type{t, {2, 3}};
    HostTensor x = kiln::random_tensor(type, 5);
    std::string path = temp_path("round_trip.npy");
    write_npy(path, x);
    HostTensor y = read_npy(path, type, "input 0 %x");
    EXPECT_EQ(y.type, type);
    EXPECT_EQ(y.values, x.values) << kiln::dtype_name(t);
  }
}

TEST(Npy, ScalarAndVectorShapes) {
  for (kiln::Shape shape : {kiln::Shape{}, kiln::Shape{7}}) {
    HostTensor x = kiln::random_tensor({DType::f32, shape}, 1);
    std::string path = temp_path("shape.npy");
    write_npy(path, x);
    NpyArray a = read_npy_file(path);
    EXPECT_EQ(a.shape, shape);
    EXPECT_EQ(a.descr, "<f4");
    EXPECT_FALSE(a.fortran_order);
  }
}

TEST(Npy, ParsesNumpysOwnHeader) {
  const float values[] = {1.5f, -2.0f};
  NpyArray a = parse_npy(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                   std::string(reinterpret_cast<const char*>(values), sizeof(values))),
                         "x.npy");
  HostTensor t = npy_to_tensor(a, {DType::f32, {2}}, "input 0 %x", "x.npy");
  EXPECT_EQ(t.values, (std::vector<double>{1.5, -2.0}));
}

TEST(Npy, Bf16IsReadFromFloat32AndRounded) {
  const float values[] = {1.0f, 1.00390625f};  // the second is halfway between two bf16 values
  NpyArray a = parse_npy(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                   std::string(reinterpret_cast<const char*>(values), sizeof(values))),
                         "x.npy");
  HostTensor t = npy_to_tensor(a, {DType::bf16, {2}}, "input 0 %x", "x.npy");
  EXPECT_EQ(t.values[0], 1.0);
  EXPECT_EQ(t.values[1], 1.0);  // ties round to even
}

TEST(Npy, WrongDtypeNamesInputAndBothDtypes) {
  NpyArray a = parse_npy(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (4, 8), }",
                                   std::string(4 * 8 * 8, '\0')),
                         "in/x.npy");
  EXPECT_EQ(error_of([&] { npy_to_tensor(a, {DType::f16, {4, 8}}, "input 0 %x", "in/x.npy"); }),
            "input 0 %x (f16[4,8]): in/x.npy holds float64 (<f8) of shape (4, 8); expected float16 (<f2) of "
            "shape (4, 8)");
}

TEST(Npy, WrongShapeNamesInputAndBothShapes) {
  NpyArray a = parse_npy(npy_bytes("{'descr': '<f2', 'fortran_order': False, 'shape': (8, 4), }",
                                   std::string(4 * 8 * 2, '\0')),
                         "in/x.npy");
  EXPECT_EQ(error_of([&] { npy_to_tensor(a, {DType::f16, {4, 8}}, "input 2 %w", "in/x.npy"); }),
            "input 2 %w (f16[4,8]): in/x.npy holds float16 (<f2) of shape (8, 4); expected float16 (<f2) of "
            "shape (4, 8)");
}

TEST(Npy, RejectsFortranOrderBigEndianAndTruncatedData) {
  NpyArray f = parse_npy(npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                                   std::string(16, '\0')),
                         "f.npy");
  EXPECT_NE(error_of([&] { npy_to_tensor(f, {DType::f32, {2, 2}}, "input 0 %x", "f.npy"); }).find("Fortran order"),
            std::string::npos);
  NpyArray b = parse_npy(npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", std::string(8, '\0')),
                         "b.npy");
  EXPECT_NE(error_of([&] { npy_to_tensor(b, {DType::f32, {2}}, "input 0 %x", "b.npy"); }).find("big-endian"),
            std::string::npos);
  NpyArray t = parse_npy(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", std::string(8, '\0')),
                         "t.npy");
  EXPECT_NE(error_of([&] { npy_to_tensor(t, {DType::f32, {4}}, "input 0 %x", "t.npy"); }).find("has 8 bytes of data"),
            std::string::npos);
}

TEST(Npy, RejectsFilesThatAreNotNpy) {
  EXPECT_NE(error_of([] { parse_npy("PK\x03\x04 not numpy at all", "x.npz"); }).find("x.npz: not a .npy file"),
            std::string::npos);
  EXPECT_NE(error_of([] { read_npy_file(temp_path("missing.npy")); }).find("cannot read"), std::string::npos);
}

TEST(Npy, ReadsFormatVersionTwo) {
  std::string v1 = npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }", std::string("\x07\0\0\0", 4));
  // Version 2.0: a 4-byte header length.
  std::string header = v1.substr(10);
  std::string v2 = std::string("\x93NUMPY\x02\x00", 8) + static_cast<char>(v1[8]) + static_cast<char>(v1[9]) +
                   std::string(2, '\0') + header;
  HostTensor t = npy_to_tensor(parse_npy(v2, "v2.npy"), {DType::i32, {1}}, "input 0 %n", "v2.npy");
  EXPECT_EQ(t.values, std::vector<double>{7});
}
