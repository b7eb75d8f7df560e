#include "python/dlpack_import.h"

#include <fmt/format.h>

#include <optional>

#include "ir/error.h"
#include "python/dlpack_abi.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

std::optional<DType> kiln_dtype(dlpack::DataType t) {
  if (t.lanes != 1) return std::nullopt;
  if (t.code == dlpack::kFloat && t.bits == 32) return DType::f32;
  if (t.code == dlpack::kFloat && t.bits == 16) return DType::f16;
  if (t.code == dlpack::kBfloat && t.bits == 16) return DType::bf16;
  if (t.code == dlpack::kInt && t.bits == 32) return DType::i32;
  if (t.code == dlpack::kBool && t.bits == 8) return DType::i1;
  if (t.code == dlpack::kFloat8E4m3fn && t.bits == 8) return DType::f8e4m3;
  if (t.code == dlpack::kFloat8E5m2 && t.bits == 8) return DType::f8e5m2;
  return std::nullopt;
}

std::string dlpack_dtype_text(dlpack::DataType t) {
  const char* kind = "";
  switch (t.code) {
    case dlpack::kInt: kind = "int"; break;
    case dlpack::kUInt: kind = "uint"; break;
    case dlpack::kFloat: kind = "float"; break;
    case dlpack::kBfloat: kind = "bfloat"; break;
    case dlpack::kBool: kind = "bool"; break;
    case dlpack::kFloat8E4m3fn: kind = "float8_e4m3fn"; break;
    case dlpack::kFloat8E5m2: kind = "float8_e5m2"; break;
    default: return fmt::format("DLPack type code {} of {} bits", t.code, t.bits);
  }
  return t.lanes == 1 ? fmt::format("{}{}", kind, t.bits) : fmt::format("{}{}x{}", kind, t.bits, t.lanes);
}

std::string device_text(int type) {
  switch (type) {
    case dlpack::kCPU: return "CPU memory";
    case dlpack::kCUDA: return "CUDA device memory";
    case dlpack::kCUDAHost: return "pinned host memory";
    case dlpack::kCUDAManaged: return "CUDA managed memory";
    default: return fmt::format("memory of DLPack device type {}", type);
  }
}

// The capsule `obj` gives for `stream`: DLPack wants 1 for the legacy default stream
// (0 is ambiguous), a stream's handle otherwise; CPU producers take no stream.
py::object capsule_of(const py::handle& obj, CUstream stream, const std::string& what) {
  if (PyCapsule_CheckExact(obj.ptr())) return py::reinterpret_borrow<py::object>(obj);
  if (!py::hasattr(obj, "__dlpack__"))
    throw Error(fmt::format("{}: a {} has no __dlpack__; pass a PyTorch or CuPy tensor (or a DLPack capsule)", what,
                            std::string(py::str(py::type::of(obj).attr("__name__")))));
  int device_type = dlpack::kCUDA;
  if (py::hasattr(obj, "__dlpack_device__")) device_type = obj.attr("__dlpack_device__")()[py::int_(0)].cast<int>();
  if (device_type != dlpack::kCUDA) return obj.attr("__dlpack__")();
  const auto handle = reinterpret_cast<uintptr_t>(stream);
  return obj.attr("__dlpack__")(py::arg("stream") = handle == 0 ? uintptr_t(1) : handle);
}

}  // namespace

BorrowedTensor borrow_tensor(const py::handle& obj, CUstream stream, const TensorType& expected,
                             const std::string& what) {
  BorrowedTensor b;
  b.capsule = capsule_of(obj, stream, what);
  auto* managed = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(b.capsule.ptr(), dlpack::kCapsuleName));
  if (!managed) {
    PyErr_Clear();
    throw Error(fmt::format("{}: the DLPack capsule was already consumed (or is not named \"dltensor\")", what));
  }
  const dlpack::Tensor& t = managed->dl_tensor;
  Shape shape(t.shape, t.shape + t.ndim);
  std::optional<DType> dtype = kiln_dtype(t.dtype);
  if (!dtype)
    throw Error(fmt::format("{}: expected {}, got {}{} (a dtype Kiln does not have)", what, expected.str(),
                            dlpack_dtype_text(t.dtype), shape_str(shape)));
  b.tensor.data = reinterpret_cast<CUdeviceptr>(t.data) + t.byte_offset;
  b.tensor.dtype = *dtype;
  b.tensor.shape = std::move(shape);
  if (t.strides) b.tensor.strides.assign(t.strides, t.strides + t.ndim);
  b.device_type = t.device.device_type;
  b.device_id = t.device.device_id;
  return b;
}

void require_cuda_memory(const BorrowedTensor& t, const TensorType& expected, const std::string& what) {
  if (t.device_type != dlpack::kCUDA && t.device_type != dlpack::kCUDAManaged)
    throw Error(fmt::format("{} ({}): the tensor is in {}; Kiln runs on CUDA device memory (move it with .cuda())",
                            what, expected.str(), device_text(t.device_type)));
}

}  // namespace kiln::python
