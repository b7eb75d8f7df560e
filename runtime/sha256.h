// SHA-256 (FIPS 180-4), small and dependency-free: the compile cache names its
// entries by the hash of everything that changes a kernel's binary, and checks
// each entry's payload against a stored hash before trusting it.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::runtime {

class Sha256 {
public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();
  void update(const void* data, size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // Pads, returns the digest and leaves the object ready for a new message.
  Digest finish();

private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> block_;
  size_t block_used_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string to_hex(const Sha256::Digest& digest);
// The digest of `data` as 64 lowercase hex characters.
std::string sha256_hex(std::string_view data);

}  // namespace kiln::runtime
