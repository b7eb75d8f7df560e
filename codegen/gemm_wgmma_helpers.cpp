// The device helpers of the wgmma gemm kernels (sm_90a): mbarriers, the copy engine's
// tensor loads, register reallocation between warpgroups and the wgmma fences and
// descriptors. Each wraps one or two PTX instructions; a kernel's prelude holds only
// those it calls. The products themselves (one asm statement with as many accumulator
// registers as the tile is wide) are written per kernel by the wgmma emitter.
#include <fmt/format.h>

#include <iterator>

#include "codegen/gemm_helpers.h"
#include "codegen/scalar_emit.h"

namespace kiln::codegen {

namespace {

// A tensor load of rank R: box coordinates innermost first, completing on `bar`. The
// multicast form (kiln_tma_multicast_Rd) lands the tile at `dst` in every block of the
// cluster whose bit is set in `mask`, each completing the mbarrier at `bar` of its own
// shared memory.
std::string tma_load(int rank, bool multicast) {
  const int first = multicast ? 4 : 3;  // the operand number of the first coordinate
  std::string params, coords, operands;
  for (int d = 0; d < rank; ++d) {
    params += fmt::format(", int c{}", d);
    coords += fmt::format("{}%{}", d ? ", " : "", d + first);
    operands += fmt::format(", \"r\"(c{})", d);
  }
  return fmt::format(
      "static __device__ __forceinline__ void kiln_tma_{}_{}d(unsigned dst, const void* map, unsigned bar{}{}) {{\n"
      "  asm volatile(\"cp.async.bulk.tensor.{}d.shared::cluster.global.mbarrier::complete_tx::bytes{} [%0], [%1, "
      "{{{}}}], [%2]{};\"\n"
      "               :: \"r\"(dst), \"l\"(map), \"r\"(bar){}{} : \"memory\");\n}}\n",
      multicast ? "multicast" : "load", rank, multicast ? ", unsigned short mask" : "", params, rank,
      multicast ? ".multicast::cluster" : "", coords, multicast ? ", %3" : "", multicast ? ", \"h\"(mask)" : "",
      operands);
}

const DeviceHelper* helpers(size_t& count) {
  static const std::string loads[] = {tma_load(2, false), tma_load(3, false), tma_load(4, false),
                                      tma_load(5, false)};
  static const std::string multicasts[] = {tma_load(2, true), tma_load(3, true), tma_load(4, true), tma_load(5, true)};
  static const DeviceHelper table[] = {
      // An mbarrier that completes a phase once `count` threads have arrived (and, for
      // the copy engine's barriers, once the bytes they expect have landed).
      {"kiln_mbarrier_init",
       "static __device__ __forceinline__ void kiln_mbarrier_init(unsigned bar, unsigned count) {\n"
       "  asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"(bar), \"r\"(count) : \"memory\");\n}\n"},
      // Makes the initialised barriers visible to the copy engine.
      {"kiln_mbarrier_init_fence",
       "static __device__ __forceinline__ void kiln_mbarrier_init_fence() {\n"
       "  asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");\n}\n"},
      // Waits until the phase of parity `parity` has completed (a fresh barrier counts
      // its phase before the first as completed: parity 1 passes at once).
      {"kiln_mbarrier_wait",
       "static __device__ __forceinline__ void kiln_mbarrier_wait(unsigned bar, unsigned parity) {\n"
       "  unsigned done = 0;\n"
       "  do {\n"
       "    asm volatile(\"{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, "
       "p; }\"\n"
       "                 : \"=r\"(done) : \"r\"(bar), \"r\"(parity) : \"memory\");\n"
       "  } while (!done);\n}\n"},
      {"kiln_mbarrier_arrive",
       "static __device__ __forceinline__ void kiln_mbarrier_arrive(unsigned bar) {\n"
       "  asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\" :: \"r\"(bar) : \"memory\");\n}\n"},
      // Arrives and tells the barrier to wait for `bytes` more bytes of tensor loads.
      {"kiln_mbarrier_expect_bytes",
       "static __device__ __forceinline__ void kiln_mbarrier_expect_bytes(unsigned bar, unsigned bytes) {\n"
       "  asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\" :: \"r\"(bar), \"r\"(bytes) : "
       "\"memory\");\n}\n"},
      {"kiln_tma_load_2d", loads[0].c_str()},
      {"kiln_tma_load_3d", loads[1].c_str()},
      {"kiln_tma_load_4d", loads[2].c_str()},
      {"kiln_tma_load_5d", loads[3].c_str()},
      {"kiln_tma_multicast_2d", multicasts[0].c_str()},
      {"kiln_tma_multicast_3d", multicasts[1].c_str()},
      {"kiln_tma_multicast_4d", multicasts[2].c_str()},
      {"kiln_tma_multicast_5d", multicasts[3].c_str()},
      // Waits, thread by thread (the threads of a warp need not arrive together), until
      // every thread of the cluster has come here: a block leaves only once the other no
      // longer touches its shared memory.
      {"kiln_cluster_leave",
       "static __device__ __forceinline__ void kiln_cluster_leave() {\n"
       "  asm volatile(\"barrier.cluster.arrive.release;\\n\\tbarrier.cluster.wait.acquire;\" ::: \"memory\");\n}\n"},
      // This block's rank in its cluster.
      {"kiln_cluster_rank",
       "static __device__ __forceinline__ unsigned kiln_cluster_rank() {\n"
       "  unsigned rank;\n  asm volatile(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(rank));\n  return rank;\n}\n"},
      // Arrives on the mbarrier at `bar` (an address in this block's shared memory) of
      // every block of a cluster of C: a stage that both blocks fill is free once the
      // consumers of both are done with it. The arrival keeps the default release at CTA
      // scope: the products that read the stage have completed (wgmma's wait) before it,
      // and release at cluster scope compiles to a GPU-wide memory barrier each K step.
      {"kiln_mbarrier_arrive_cluster",
       "template <int C> static __device__ __forceinline__ void kiln_mbarrier_arrive_cluster(unsigned bar) {\n"
       "#pragma unroll\n"
       "  for (unsigned r = 0; r < C; ++r) {\n"
       "    unsigned remote;\n"
       "    asm volatile(\"mapa.shared::cluster.u32 %0, %1, %2;\" : \"=r\"(remote) : \"r\"(bar), \"r\"(r));\n"
       "    asm volatile(\"mbarrier.arrive.shared::cluster.b64 _, [%0];\" :: \"r\"(remote) : "
       "\"memory\");\n"
       "  }\n}\n"},
      // Registers move between warpgroups: the producer gives most of its own back, the
      // consumers take them for their accumulators.
      {"kiln_registers_release",
       "template <int N> static __device__ __forceinline__ void kiln_registers_release() {\n"
       "  asm volatile(\"setmaxnreg.dec.sync.aligned.u32 %0;\" :: \"n\"(N));\n}\n"},
      {"kiln_registers_claim",
       "template <int N> static __device__ __forceinline__ void kiln_registers_claim() {\n"
       "  asm volatile(\"setmaxnreg.inc.sync.aligned.u32 %0;\" :: \"n\"(N));\n}\n"},
      // A barrier among `count` threads (whole warps) under id `id` (0 is __syncthreads'):
      // the consumers of a tile meet without the producer.
      {"kiln_named_barrier",
       "static __device__ __forceinline__ void kiln_named_barrier(int id, int count) {\n"
       "  asm volatile(\"bar.sync %0, %1;\" :: \"r\"(id), \"r\"(count) : \"memory\");\n}\n"},
      // The two halves of a barrier between warpgroups taking turns: one arrives (without
      // waiting) when the other may go on; the other waits there.
      {"kiln_named_barrier_sync",
       "static __device__ __forceinline__ void kiln_named_barrier_sync(int id, int count) {\n"
       "  asm volatile(\"bar.sync %0, %1;\" :: \"r\"(id), \"r\"(count) : \"memory\");\n}\n"},
      {"kiln_named_barrier_arrive",
       "static __device__ __forceinline__ void kiln_named_barrier_arrive(int id, int count) {\n"
       "  asm volatile(\"bar.arrive %0, %1;\" :: \"r\"(id), \"r\"(count) : \"memory\");\n}\n"},
      // Orders the accumulator registers' earlier accesses before the wgmma that follows.
      {"kiln_wgmma_fence",
       "static __device__ __forceinline__ void kiln_wgmma_fence() {\n"
       "  asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");\n}\n"},
      // Closes the group of wgmma products issued since the last commit.
      {"kiln_wgmma_commit",
       "static __device__ __forceinline__ void kiln_wgmma_commit() {\n"
       "  asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");\n}\n"},
      // Waits until at most N committed groups are still running.
      {"kiln_wgmma_wait",
       "template <int N> static __device__ __forceinline__ void kiln_wgmma_wait() {\n"
       "  asm volatile(\"wgmma.wait_group.sync.aligned %0;\" :: \"n\"(N) : \"memory\");\n}\n"},
      // A shared-memory matrix descriptor with the 128-byte swizzle: the start address,
      // the leading and stride byte offsets, each in units of 16 bytes.
      {"kiln_wgmma_desc",
       "static __device__ __forceinline__ unsigned long long kiln_wgmma_desc(unsigned addr, unsigned leading, "
       "unsigned stride) {\n"
       "  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (unsigned long long)(leading >> 4) << 16 |\n"
       "         (unsigned long long)(stride >> 4) << 32 | 1ull << 62;\n}\n"},
  };
  count = std::size(table);
  return table;
}

}  // namespace

std::string gemm_wgmma_helper_definitions(const std::string& code) {
  size_t count = 0;
  const DeviceHelper* table = helpers(count);
  return called_helpers(code, table, count);
}

}  // namespace kiln::codegen
