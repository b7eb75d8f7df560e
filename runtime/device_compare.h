// Comparing a device buffer with a reference on the GPU: the same sums as
// ir/compare.h's compare_range (squared error, squared reference, largest error,
// unexpected NaN/Inf, mismatches), computed by a small kernel so that checking a
// candidate of 2^27 elements costs a fraction of a millisecond instead of a download
// and a pass on the host. The sums come back per block and merge on the host in
// block order, so a comparison gives the same figures every time.
#pragma once
#include <vector>

#include "ir/compare.h"
#include "ir/tensor.h"
#include "runtime/device_buffer.h"

namespace kiln::runtime {

// A reference tensor uploaded once as doubles (exact for every dtype Kiln has), and
// the rel-L2 bound a comparison with it uses (< 0: the dtype's default).
class DeviceReference {
public:
  explicit DeviceReference(const HostTensor& want, double bound = -1);
  const HostTensor& host() const { return *want_; }
  // `got` holds a packed tensor of the reference's type (as a kernel writes it).
  Comparison compare(const DeviceBuffer& got, const std::string& arch) const;

private:
  const HostTensor* want_;
  double bound_;
  DeviceBuffer values_;
};

}  // namespace kiln::runtime
