#include "tests/fuzz/decisions.h"

namespace kiln::fuzz {

Decisions Decisions::from_seed(uint64_t seed, size_t count) {
  std::vector<uint8_t> bytes;
  bytes.reserve(count);
  uint64_t state = seed;
  while (bytes.size() < count) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    for (int i = 0; i < 8 && bytes.size() < count; ++i) bytes.push_back(static_cast<uint8_t>(z >> (8 * i)));
  }
  return Decisions(std::move(bytes));
}

uint32_t Decisions::below(uint32_t n) {
  if (n <= 1) return 0;
  uint32_t x = next_byte();
  if (n > 256) x = x << 8 | next_byte();  // two bytes for the rare large range
  return x % n;
}

}  // namespace kiln::fuzz
