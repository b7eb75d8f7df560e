// Which elements of a graph's outputs hang on the last bit of an intermediate value.
// A GPU computes exp, division or a sum in fp32 where the reference interpreter works
// in double, so a value rounded to f16 may land on the neighbour of the reference's;
// most outputs do not care, but a compare, a cast to an integer, a cancellation or an
// overflow after it turns that bit into a different answer that is no bug. kiln-difftest
// asks the reference itself: it re-evaluates the graph with every computed float value
// moved by about one unit in the last place of its dtype, and checks an output only on
// the elements that no such nudge moves past the output's bound.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln::fuzz {

struct Intermediates;

// `g` with each computed float value v (not inputs, constants, iotas or views; not the
// results of neg, abs, relu, max, min, select and exact casts, which round nothing)
// replaced by v * n, n an extra input of v's type whose elements are 1 + s * u * 2^-f (f the
// dtype's fraction bits, exact in it; u the units of error the GPU's op may make in
// fp32, 2 for exp or rsqrt, 4 for pow: CUDA's table of maximum ulp errors; 1 for f16 and
// bf16, whose rounding dwarfs it), the sign s drawn per element from `seed`: a mean of
// values of both signs moves too, as it would under independent roundings. Given the
// reference's intermediates `at`, a nonzero 16- or 8-bit value moves by one spacing of
// its dtype at its own magnitude instead (to the neighbour a kernel may round to). Given the
// reference's intermediates `at`, a value whose op has a magnitude (magnitude.h) also
// moves by about log2(terms) fp32 units of it either way (an extra input added; terms:
// the elements a sum folds into each result, 1 for other ops), and an element that is
// zero or near zero is replaced by +0, -0 or one unit of its magnitude either way where
// the nudged value is still within that unit of zero (extra inputs: a mask, the values
// and the units), as its sign and whether it is zero at all hang on roundings. `pattern`
// picks the signs: 0 moves the values of even elements up and odd ones down and every
// near-zero one to the zero of the other sign, 1 the values the other way round and every
// near-zero one a unit the other way, 2 and 3 move
// nothing but near-zero values, to the zero of their own sign (2) and a unit their own
// way (3), and 2 puts a value within its op's error of an integer on that integer, 4 and up random throughout. Where a kernel cannot follow the reference (a
// var or a norm squaring values past fp32's range, an attention whose v holds an Inf:
// magnitude.h), those elements become NaN in every try.
struct Nudged {
  ir::Graph graph;                  // g's inputs, then the extra inputs of the nudges
  std::vector<HostTensor> factors;  // the values of those extra inputs
};
Nudged nudged(const ir::Graph& g, uint64_t seed, const Intermediates* at = nullptr, int pattern = 4);

// What the nudges do to each element e of each output i, over `tries` of them, try t
// taking pattern t: flips[i][e], whether one changed its class of NaN / Inf, its
// integer or its boolean; spread[i][e], the farthest one moved a finite float from the
// reference. scale[i] is the output's RMS and floors[i][e] its absolute floor
// (magnitude.h).
struct Sensitivity {
  std::vector<std::vector<bool>> flips;
  std::vector<std::vector<double>> spread;
  std::vector<double> scale;
  std::vector<std::vector<double>> floors;
};
Sensitivity sensitivity(const ir::Graph& g, const std::vector<HostTensor>& inputs,
                        const std::vector<HostTensor>& reference, const std::vector<double>& bounds, int tries = 6);

// stable[i][e]: whether element e of output i neither flips nor moves past `bounds[i]`
// (relative to the output's RMS, plus its absolute floor) under the nudges.
std::vector<std::vector<bool>> stable_elements(const ir::Graph& g, const std::vector<HostTensor>& inputs,
                                               const std::vector<HostTensor>& reference,
                                               const std::vector<double>& bounds, int tries = 6);

}  // namespace kiln::fuzz
