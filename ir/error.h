// kiln::Error: the one exception type Kiln throws for bad input or a failed call.
// Nothing in Kiln aborts the process; callers catch this and print what() .
#pragma once
#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace kiln
