#include "runtime/device_tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/error.h"

namespace kiln::runtime {

namespace {

bool row_major_contiguous(const Shape& shape, const std::vector<int64_t>& strides) {
  const Shape dense = row_major_strides(shape);
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1 && strides[d] != dense[d]) return false;
  return true;
}

}  // namespace

void check_device_tensor(const DeviceTensor& t, const TensorType& expected, const std::string& what) {
  const TensorType got{t.dtype, t.shape};
  if (got != expected) throw Error(fmt::format("{}: expected {}, got {}", what, expected.str(), got.str()));
  if (!t.strides.empty()) {
    if (t.strides.size() != t.shape.size())
      throw Error(fmt::format("{} ({}): {} strides for {} dims", what, expected.str(), t.strides.size(),
                              t.shape.size()));
    if (!row_major_contiguous(t.shape, t.strides))
      throw Error(fmt::format("{} ({}): strides [{}] (in elements) are not row-major contiguous (expected [{}]); "
                              "Kiln reads and writes dense tensors: pass a contiguous one (e.g. .contiguous())",
                              what, expected.str(), fmt::join(t.strides, ", "),
                              fmt::join(row_major_strides(t.shape), ", ")));
  }
  if (t.data == 0) throw Error(fmt::format("{} ({}): the data pointer is null", what, expected.str()));
  if (t.data % kDeviceTensorAlignment != 0)
    throw Error(fmt::format("{} ({}): data at 0x{:x} is not {}-byte aligned (Kiln's kernels use vector "
                            "loads); pass a tensor that starts at its allocation or a copy",
                            what, expected.str(), t.data, kDeviceTensorAlignment));
}

void check_device_tensors(const passes::Plan& plan, const std::vector<DeviceTensor>& inputs,
                          const std::vector<DeviceTensor>& outputs) {
  if (inputs.size() != plan.inputs.size() || outputs.size() != plan.outputs.size())
    throw Error(fmt::format("the graph takes {} input(s) and {} output(s); {} and {} tensors were given",
                            plan.inputs.size(), plan.outputs.size(), inputs.size(), outputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const passes::Buffer& b = plan.buffers[plan.inputs[i]];
    check_device_tensor(inputs[i], b.type, fmt::format("input {} %{}", i, b.name));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const passes::Buffer& b = plan.buffers[plan.outputs[i]];
    check_device_tensor(outputs[i], b.type, fmt::format("output {} %{}", i, b.name));
  }
}

}  // namespace kiln::runtime
