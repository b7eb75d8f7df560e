// Tensors as NumPy .npy files, so that `kiln run --save` writes what numpy.load
// reads and `kiln run --inputs` reads what numpy.save writes. Written as format 1.0;
// read in formats 1.0, 2.0 and 3.0, little-endian and C order only. bf16 has no
// NumPy dtype: it is written as float32 (exactly representable) and read from
// float32, each value rounded to bf16; so are f8e4m3 and f8e5m2. i4 has none either: it is written as int8, one
// element a byte (-8 to 7), and read from int8 in that range.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "ir/tensor.h"

namespace kiln::runtime {

void write_npy(const std::string& path, const HostTensor& t);

// What a .npy file holds, as its header says.
struct NpyArray {
  std::string descr;           // NumPy's dtype string: "<f2", "<f4", "|b1", ...
  std::vector<int64_t> shape;  // () for a scalar
  bool fortran_order = false;
  std::vector<std::byte> data;
};

// Parses the bytes of a .npy file; `source` names it in errors. Throws kiln::Error
// on a bad magic string, an unreadable header or data shorter than the header says.
NpyArray parse_npy(std::string_view bytes, const std::string& source);
NpyArray read_npy_file(const std::string& path);

// The descr a tensor of dtype `t` is stored with ("<f4" for f32 and bf16, "|i1" for i8 and i4).
std::string_view npy_descr(DType t);
// "float16 (<f2)": a descr as NumPy users know it.
std::string npy_dtype_text(std::string_view descr);

// `array` as a tensor of type `expected`. Throws kiln::Error starting with `what`
// ("input 1 %r") when its dtype, shape or order differs, saying what was expected and
// what the file holds.
HostTensor npy_to_tensor(const NpyArray& array, const TensorType& expected, const std::string& what,
                         const std::string& source);
HostTensor read_npy(const std::string& path, const TensorType& expected, const std::string& what);

}  // namespace kiln::runtime
