// The memory ceilings a memory-bound kernel is placed under, measured in the same run as
// the kernels: copy (each byte read and written), read-only and write-only streams over
// 1 GiB. A kernel that reads R bytes and writes W is placed under the ceiling of its own
// mix (mix_ceiling_gbs), not under the copy alone: a reduction reads at the read ceiling,
// which on the H200 lies above the copy figure.
#pragma once
#include <cstddef>
#include <cstdint>

namespace kiln::runtime {

struct StreamCeilings {
  double copy_gbs = 0;   // bytes read + written per second by a device-to-device copy
  double read_gbs = 0;   // bytes read per second by a kernel that writes 1/16384 of them
  double write_gbs = 0;  // bytes written per second by a kernel that reads nothing
};

// Bytes read per second: a kernel sums `bytes` of f32 (every value 1, so the sum checks
// that every byte was read), one partial per 64 KiB. Throws kiln::Error on a wrong sum.
double measure_read_bandwidth_gbs(size_t bytes = size_t(1) << 30);
// Bytes written per second: a kernel fills `bytes` of f32 with 1.0 in 16-byte stores.
double measure_write_bandwidth_gbs(size_t bytes = size_t(1) << 30);
// All three, one after another, on 1 GiB each.
StreamCeilings measure_stream_ceilings();

// The ceiling, in GB/s of R + W, of a kernel that reads `read_bytes` and writes
// `written_bytes`, from the three measured streams: the time a byte takes is
// interpolated, linearly in the share of bytes written, between the read-only stream
// (none written), the copy (half) and the write-only stream (all). A copy is placed
// under its own measurement, a reduction under the read stream. Each byte costing its
// own stream's time alone (R / read + W / write) puts the copy 3-8% above what a copy
// measures on the H200 (bench/NOTES.md): turning the bus between reads and writes
// costs time of its own, which the measured copy holds. 0 when a ceiling the mix
// needs was not measured, or the mix moves no bytes.
double mix_ceiling_gbs(int64_t read_bytes, int64_t written_bytes, const StreamCeilings& ceilings);

}  // namespace kiln::runtime
