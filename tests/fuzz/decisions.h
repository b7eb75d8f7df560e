// Decisions: the choices a random graph is made of, drawn from a byte string (a
// fuzzer's input, or a seeded stream for the differential tester). Past the end of
// the bytes every draw is 0, so any byte string decodes to a graph, and a shorter
// one to a smaller graph: libFuzzer's mutations then mean something to the generator.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::fuzz {

class Decisions {
public:
  explicit Decisions(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
  Decisions(const uint8_t* data, size_t size) : bytes_(data, data + size) {}
  // `count` pseudo-random bytes (splitmix64 of `seed`): the same seed, the same graph.
  static Decisions from_seed(uint64_t seed, size_t count = 4096);

  // A number in [0, n) (0 when n <= 1 or the bytes ran out).
  uint32_t below(uint32_t n);
  // True about once in `n` draws.
  bool one_in(uint32_t n) { return below(n) == 0; }
  // An element of a non-empty list.
  template <class T>
  const T& pick(const std::vector<T>& items) {
    return items[below(static_cast<uint32_t>(items.size()))];
  }
  bool exhausted() const { return at_ >= bytes_.size(); }

private:
  uint8_t next_byte() { return at_ < bytes_.size() ? bytes_[at_++] : 0; }

  std::vector<uint8_t> bytes_;
  size_t at_ = 0;
};

}  // namespace kiln::fuzz
