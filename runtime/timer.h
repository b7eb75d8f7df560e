// Running and timing kernels on the GPU: a checked launch, CUDA-event timing
// (warm-up, then the median of several runs), and the measured copy bandwidth
// that serves as the memory roofline.
#pragma once
#include <cuda.h>

#include <cstddef>
#include <functional>
#include <string_view>
#include <vector>

namespace kiln::runtime {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// Launches `function` on `stream`. `args` holds one pointer per kernel parameter,
// pointing at the value (as cuLaunchKernel wants). Dynamic shared memory above the
// default 48 KiB is opted into first. `name` appears in the error of a failed launch.
void launch_kernel(CUfunction function, Dim3 grid, Dim3 block, unsigned shared_bytes, const std::vector<void*>& args,
                   std::string_view name = "kernel", CUstream stream = nullptr);

// Where a kernel asks several blocks to share an SM, prefers the largest shared-memory
// carveout for `function`: left to itself the driver picks the smallest that holds one
// block (200 KB for a block of 194 KB on an H100), which would hold one of two blocks of
// 112 KB.
void prefer_shared_blocks(CUfunction function, unsigned blocks_per_sm);

// Calls `launch` `warmup` times, then `reps` times between CUDA events on the null
// stream, and returns the median time of one call in milliseconds.
float time_kernel_ms(const std::function<void()>& launch, int warmup, int reps);

// Calls `launch` until the GPU has spent at least `min_ms` in it (a batch of calls at a
// time between events), and returns the calls made. After an idle gap (a compile, a
// check of the outputs on the host) the clocks have dropped; a few warm-up calls of a
// 0.2 ms kernel time it partly at the low clock, by 10-20% on the H200.
int warm_up_for_ms(const std::function<void()>& launch, float min_ms);

// As time_kernel_ms, but `launch` is captured `per_graph` times into one CUDA graph,
// replayed `reps` times between events: the median time of one launch without the
// cost of launching it from the host (an event pair around one launch floors near
// 5 us). This is how CUDA-graph users (torch.compile's "reduce-overhead", serving
// loops) see a short kernel. `launch` must enqueue through launch_kernel or the
// runtime's async copies with no stream of its own (they go to the capture's stream,
// cu::ScopedLaunchStream), and make no synchronous call.
float time_in_graph_ms(const std::function<void()>& launch, int warmup, int reps, int per_graph = 20);

// Launches shorter than this (by event timing) are timed in CUDA graphs by `kiln run
// --bench`, `kiln bench` and the tuner.
inline constexpr float kGraphTimingBelowMs = 0.05f;

// Device-to-device copy bandwidth in GB/s (1e9 bytes/s), counting the bytes read and
// the bytes written: the median of several copies of `bytes`.
double measure_copy_bandwidth_gbs(size_t bytes = size_t(1) << 30);

}  // namespace kiln::runtime
