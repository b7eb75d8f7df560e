// Writing tensors as NumPy .npy files (format version 1.0), so that inputs and
// outputs of `kiln run --save` load with numpy.load. bf16 has no NumPy dtype:
// it is written as float32 (exactly representable).
#pragma once
#include <string>

#include "ir/tensor.h"

namespace kiln::tools {

void write_npy(const std::string& path, const HostTensor& t);

}  // namespace kiln::tools
