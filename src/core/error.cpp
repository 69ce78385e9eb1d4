#include "xtrain/error.hpp"

namespace xtrain::detail {

void throw_internal_error(const char* file, int line, const char* condition,
                          const std::string& message) {
  std::string text = concat("internal error (a bug in xtrain, please report it): ", file, ":", line,
                            ": ", condition, " failed");
  if (!message.empty()) text += ": " + message;
  throw InternalError(text);
}

}  // namespace xtrain::detail
