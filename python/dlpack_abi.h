// The DLPack exchange ABI (the structs a producer's "dltensor" capsule points to), as
// the DLPack specification defines it: Kiln reads PyTorch's, CuPy's and NumPy's tensors
// through it without copying. Only the unversioned form (DLPack < 1.0, which every
// producer gives when asked without max_version) is used.
#pragma once
#include <cstdint>

namespace kiln::python::dlpack {

enum DeviceType : int32_t { kCPU = 1, kCUDA = 2, kCUDAHost = 3, kCUDAManaged = 13 };
// The fp8 codes are DLPack 1.1's (kDLFloat8_e4m3fn, kDLFloat8_e5m2): PyTorch's float8_e4m3fn
// and float8_e5m2, which are Kiln's f8e4m3 and f8e5m2.
enum TypeCode : uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kBfloat = 4, kBool = 6, kFloat8E4m3fn = 10, kFloat8E5m2 = 12 };

struct Device {
  int32_t device_type;
  int32_t device_id;
};

struct DataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};

struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null: row-major contiguous
  uint64_t byte_offset;
};

struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};

// The capsule names: a fresh one, and one a consumer has taken ownership of.
inline constexpr const char* kCapsuleName = "dltensor";

}  // namespace kiln::python::dlpack
