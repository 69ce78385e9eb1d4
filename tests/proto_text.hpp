// A protobuf message of a test, read from prototxt text.
#pragma once

#include <string>

#include "xtrain/proto_io.hpp"

namespace xtrain::testing {

// parse<FillerParameter>("type: 'constant' value: 2"); a parse error names
// the text `source_name`.
template <typename Message>
Message parse(const std::string& text, const std::string& source_name = "<string>") {
  Message message;
  read_proto_from_text_string(text, &message, source_name);
  return message;
}

}  // namespace xtrain::testing
