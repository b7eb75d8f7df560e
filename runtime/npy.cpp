// The .npy format: a magic string, a version, a little-endian header length, a
// Python dict literal ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), })
// padded with spaces to a multiple of 64 bytes, then the raw elements.
#include "runtime/npy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>

#include "ir/error.h"

namespace kiln::runtime {

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

std::string shape_text(const std::vector<int64_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

// The text after `'key':` in the header dict, with leading blanks skipped.
std::string_view value_of(std::string_view header, std::string_view key, const std::string& source) {
  for (char quote : {'\'', '"'}) {
    const std::string quoted = fmt::format("{0}{1}{0}", quote, key);
    size_t at = header.find(quoted);
    if (at == std::string_view::npos) continue;
    at = header.find(':', at + quoted.size());
    if (at == std::string_view::npos) break;
    std::string_view rest = header.substr(at + 1);
    while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front()))) rest.remove_prefix(1);
    return rest;
  }
  throw Error(fmt::format("{}: the .npy header has no '{}' entry: {}", source, key, header));
}

std::string parse_descr(std::string_view v, const std::string& source) {
  if (v.empty() || (v[0] != '\'' && v[0] != '"')) throw Error(fmt::format("{}: bad 'descr' in the .npy header", source));
  size_t end = v.find(v[0], 1);
  if (end == std::string_view::npos) throw Error(fmt::format("{}: bad 'descr' in the .npy header", source));
  return std::string(v.substr(1, end - 1));
}

std::vector<int64_t> parse_shape(std::string_view v, const std::string& source) {
  const std::string bad = fmt::format("{}: bad 'shape' in the .npy header", source);
  if (v.empty() || v[0] != '(') throw Error(bad);
  size_t end = v.find(')');
  if (end == std::string_view::npos) throw Error(bad);
  std::vector<int64_t> shape;
  std::string_view items = v.substr(1, end - 1);
  while (!items.empty()) {
    while (!items.empty() && (items.front() == ' ' || items.front() == ',')) items.remove_prefix(1);
    if (items.empty()) break;
    int64_t d = 0;
    size_t n = 0;
    while (n < items.size() && std::isdigit(static_cast<unsigned char>(items[n]))) {
      if (d > (int64_t(1) << 50)) throw Error(bad);
      d = d * 10 + (items[n++] - '0');
    }
    if (n == 0) throw Error(bad);
    shape.push_back(d);
    items.remove_prefix(n);
  }
  return shape;
}

}  // namespace

std::string_view npy_descr(DType t) {
  switch (t) {
    case DType::f32: return "<f4";
    case DType::f16: return "<f2";
    case DType::bf16: return "<f4";
    case DType::i32: return "<i4";
    case DType::i1: return "|b1";
    case DType::i8: case DType::i4: return "|i1";
    case DType::f8e4m3: case DType::f8e5m2: return "<f4";
  }
  return "<f4";
}

std::string npy_dtype_text(std::string_view descr) {
  static const std::pair<std::string_view, std::string_view> kNames[] = {
      {"f2", "float16"}, {"f4", "float32"}, {"f8", "float64"}, {"i1", "int8"},   {"i2", "int16"},
      {"i4", "int32"},   {"i8", "int64"},   {"u1", "uint8"},   {"u2", "uint16"}, {"u4", "uint32"},
      {"u8", "uint64"},  {"b1", "bool"},    {"c8", "complex64"}, {"c16", "complex128"}};
  std::string_view code = descr.size() > 1 ? descr.substr(1) : descr;
  for (const auto& [c, name] : kNames)
    if (code == c) return fmt::format("{} ({}){}", name, descr, descr[0] == '>' ? ", big-endian" : "");
  return std::string(descr);
}

void write_npy(const std::string& path, const HostTensor& t) {
  HostTensor stored = t;
  if (t.type.dtype == DType::bf16 || is_fp8(t.type.dtype)) stored.type.dtype = DType::f32;  // exact in float32
  if (t.type.dtype == DType::i4) stored.type.dtype = DType::i8;  // one element a byte
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", npy_descr(t.type.dtype),
                                   shape_text(t.type.shape));
  // Magic (6) + version (2) + header length (2) + header, padded to a multiple of 64 with a final newline.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(header.size());
  char len_bytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  f.write(len_bytes, 2);
  f << header;
  std::vector<std::byte> bytes = stored.to_bytes();
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw Error(fmt::format("cannot write {}", path));
}

NpyArray parse_npy(std::string_view bytes, const std::string& source) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != kMagic)
    throw Error(fmt::format("{}: not a .npy file (no \\x93NUMPY magic string)", source));
  const auto byte = [&](size_t i) { return static_cast<size_t>(static_cast<unsigned char>(bytes[i])); };
  const size_t major = byte(6);
  size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = byte(8) | byte(9) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw Error(fmt::format("{}: truncated .npy header", source));
    header_len = byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
    start = 12;
  } else {
    throw Error(fmt::format("{}: .npy format version {}.{} is not supported (1.0 to 3.0 are)", source, major, byte(7)));
  }
  if (bytes.size() < start + header_len) throw Error(fmt::format("{}: truncated .npy header", source));
  std::string_view header = bytes.substr(start, header_len);
  NpyArray a;
  a.descr = parse_descr(value_of(header, "descr", source), source);
  a.fortran_order = value_of(header, "fortran_order", source).starts_with("True");
  a.shape = parse_shape(value_of(header, "shape", source), source);
  std::string_view data = bytes.substr(start + header_len);
  a.data.resize(data.size());
  std::memcpy(a.data.data(), data.data(), data.size());
  return a;
}

NpyArray read_npy_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("cannot read {}", path));
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse_npy(bytes, path);
}

HostTensor npy_to_tensor(const NpyArray& a, const TensorType& expected, const std::string& what,
                         const std::string& source) {
  const std::string want = fmt::format("{} of shape {}", npy_dtype_text(npy_descr(expected.dtype)),
                                       shape_text(expected.shape));
  const std::string got = fmt::format("{} of shape {}", npy_dtype_text(a.descr), shape_text(a.shape));
  if (a.descr != npy_descr(expected.dtype) || a.shape != expected.shape)
    throw Error(fmt::format("{} ({}): {} holds {}; expected {}", what, expected.str(), source, got, want));
  if (a.fortran_order && expected.rank() > 1)
    throw Error(fmt::format("{} ({}): {} is in Fortran order; Kiln reads C order (numpy.ascontiguousarray)", what,
                            expected.str(), source));
  TensorType stored = expected;
  if (expected.dtype == DType::bf16 || is_fp8(expected.dtype)) stored.dtype = DType::f32;
  if (expected.dtype == DType::i4) stored.dtype = DType::i8;
  const auto need = static_cast<size_t>(stored.bytes());
  if (a.data.size() < need)
    throw Error(fmt::format("{}: {} has {} bytes of data; {} needs {}", what, source, a.data.size(), want, need));
  HostTensor t = HostTensor::from_bytes(stored, a.data.data());
  if (expected.dtype == DType::bf16 || is_fp8(expected.dtype))
    return HostTensor(expected, std::move(t.values));  // rounds to the narrow type
  if (expected.dtype == DType::i4) {
    for (size_t i = 0; i < t.values.size(); ++i)
      if (t.values[i] < -8 || t.values[i] > 7)
        throw Error(fmt::format("{} ({}): {} holds {} at flat index {}; i4 elements are -8 to 7", what,
                                expected.str(), source, t.values[i], i));
    t.type = expected;
  }
  return t;
}

HostTensor read_npy(const std::string& path, const TensorType& expected, const std::string& what) {
  return npy_to_tensor(read_npy_file(path), expected, what, path);
}

}  // namespace kiln::runtime
