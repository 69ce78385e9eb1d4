// A hint for a prototxt parse error caused by a missing '}'.
//
// protobuf's text parser notices a missing '}' only where the text stops
// making sense for the block that is still open -- typically at the next
// `layer {`, reported as 'LayerParameter has no field named "layer"', often
// several lines after the mistake. The blocks still open at the error line
// say where to look.
#pragma once

#include <string>

namespace xtrain {

// "the block 'convolution_param {' opened at line 12 is still open here: is
// a '}' missing between line 12 and line 18?", or "" when no block is open at
// `error_line` (1-based). Strings and # comments are skipped.
std::string unclosed_block_hint(const std::string& text, int error_line);

}  // namespace xtrain
