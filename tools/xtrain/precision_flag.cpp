// --precision, for the commands that build nets (train, test, time,
// extract_features): apart from common.cpp, whose flags every command that
// configures the CPU reads (tests/tools/help_test.cpp).
#include "command.hpp"
#include "flags.hpp"

namespace xtrain::cli {

std::optional<NumberType> precision_flag() {
  if (FLAGS_precision.empty()) return std::nullopt;
  return parse_number_type(FLAGS_precision, "--precision");
}

}  // namespace xtrain::cli
