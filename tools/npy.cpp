#include "tools/npy.h"

#include <fmt/format.h>

#include <cstring>
#include <fstream>

#include "ir/error.h"

namespace kiln::tools {

void write_npy(const std::string& path, const HostTensor& t) {
  const char* descr = "<f4";
  HostTensor stored = t;
  switch (t.type.dtype) {
    case DType::f32: descr = "<f4"; break;
    case DType::f16: descr = "<f2"; break;
    case DType::bf16: descr = "<f4"; stored.type.dtype = DType::f32; break;
    case DType::i32: descr = "<i4"; break;
    case DType::i1: descr = "|b1"; break;
  }
  std::string shape = "(";
  for (int64_t d : t.type.shape) shape += std::to_string(d) + ",";
  if (t.type.shape.size() > 1) shape.pop_back();
  shape += ")";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape);
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

}  // namespace kiln::tools
