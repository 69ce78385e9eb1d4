// A hint for a prototxt parse error caused by a missing or a stray brace.
//
// protobuf's text parser notices a missing '}' only where the text stops
// making sense for the block that is still open -- typically at the next
// `layer {`, reported as 'LayerParameter has no field named "layer"', or at
// a field of the enclosing block ('ConvolutionParameter has no field named
// "bottom"'), often several lines after the mistake. A stray '}' closes a
// block early: the fields after it are "not found" in the block outside, or
// at the top level the parser expects a field name and gets '}'. The blocks
// open (and the one last closed) where the parser stopped, with the message
// types that the field names lead to, say which it was and where to look.
#pragma once

#include <string>

namespace google::protobuf {
class Descriptor;
}

namespace xtrain {

// Where protobuf's text parser stopped and what it said.
struct TextParseError {
  int line = 0;    // 1-based
  int column = 0;  // 0-based, tabs advancing to the next multiple of 8 (protobuf's count)
  std::string message;
};

// For `text` parsed as a `root` message and failing with `error`: e.g.
//   layer "conv1" opened at line 19 is not closed before line 34: is a '}'
//   missing between line 19 and line 34?
//   the '}' at line 12 closes no block (the last one, layer "ip2" opened at
//   line 5, was closed at line 11): remove it or add the '{' it was meant for
// or "" when the error does not look like a brace mistake (a misspelt field
// name, a bad value). Strings and # comments are skipped.
std::string brace_mistake_hint(const std::string& text, const google::protobuf::Descriptor& root,
                               const TextParseError& error);

}  // namespace xtrain
