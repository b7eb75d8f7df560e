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

// `g` with each computed float value v (not inputs, constants, iotas or views) replaced
// by v * n, n an extra input of v's type whose elements are 1 + s * 2^-f (f the dtype's
// fraction bits, exact in it), the sign s drawn per element from `seed`: a mean of values
// of both signs moves too, as it would under independent roundings. Given the reference's
// intermediates `at`, a value whose op has a magnitude (magnitude.h) also moves by one
// fp32 unit of it either way (an extra input added), and an element that is zero or near
// zero is replaced by +0, -0 or that unit either way (extra inputs: a mask and the
// values), as its sign and whether it is zero at all hang on roundings.
struct Nudged {
  ir::Graph graph;                  // g's inputs, then the extra inputs of the nudges
  std::vector<HostTensor> factors;  // the values of those extra inputs
};
Nudged nudged(const ir::Graph& g, uint64_t seed, const Intermediates* at = nullptr);

// stable[i][e]: whether element e of output i stays within `bounds[i]` (relative to the
// output's RMS, plus its absolute floor: magnitude.h), in the same class of NaN / Inf,
// the same integer or boolean, under each of `tries` nudges (with the near-zero ones).
std::vector<std::vector<bool>> stable_elements(const ir::Graph& g, const std::vector<HostTensor>& inputs,
                                               const std::vector<HostTensor>& reference,
                                               const std::vector<double>& bounds, int tries = 3);

}  // namespace kiln::fuzz
