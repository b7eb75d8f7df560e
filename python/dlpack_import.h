// A Python tensor (anything with __dlpack__, or a "dltensor" capsule) seen as a
// kiln::DeviceTensor, borrowed: the capsule stays alive with this object, and the
// producer frees it as usual when it is dropped. No data is copied.
#pragma once
#include <pybind11/pybind11.h>

#include <string>

#include "runtime/device_tensor.h"

namespace kiln::python {

struct BorrowedTensor {
  pybind11::object capsule;  // keeps the producer's memory and DLPack struct alive
  runtime::DeviceTensor tensor;
  int device_type = 0;       // DLPack's: 1 CPU, 2 CUDA, ...
  int device_id = 0;
};

// `stream` is the stream Kiln will run on: a CUDA producer is asked to make its
// pending work on `obj` visible to it (DLPack's stream argument). Throws kiln::Error
// starting with `what` when `obj` has no DLPack form or a dtype Kiln lacks, saying
// what was expected (`expected`).
BorrowedTensor borrow_tensor(const pybind11::handle& obj, CUstream stream, const TensorType& expected,
                             const std::string& what);

// Throws kiln::Error starting with `what` unless the tensor lies in CUDA device memory.
void require_cuda_memory(const BorrowedTensor& t, const TensorType& expected, const std::string& what);

}  // namespace kiln::python
