#include "core/unclosed_block_hint.hpp"

#include <cctype>
#include <vector>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

struct OpenBlock {
  std::string name;  // the field before '{' ("layer", "convolution_param")
  int line;
};

// The identifier that ends just before position `end` (skipping blanks and
// an optional ':'), e.g. "layer" in "layer {".
std::string name_before(const std::string& text, std::size_t end) {
  std::size_t i = end;
  auto skip_blanks = [&] {
    while (i > 0 && std::isspace(static_cast<unsigned char>(text[i - 1]))) --i;
  };
  skip_blanks();
  if (i > 0 && text[i - 1] == ':') {
    --i;
    skip_blanks();
  }
  const std::size_t last = i;
  while (i > 0 && (std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '_')) {
    --i;
  }
  return text.substr(i, last - i);
}

}  // namespace

std::string unclosed_block_hint(const std::string& text, int error_line) {
  std::vector<OpenBlock> open;
  int line = 1;
  for (std::size_t i = 0; i < text.size() && line < error_line; ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
    } else if (c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      // A quoted string, with backslash escapes, ends at its quote or the line.
      while (i + 1 < text.size() && text[i + 1] != c && text[i + 1] != '\n') {
        if (text[i + 1] == '\\') ++i;
        ++i;
      }
      if (i + 1 < text.size() && text[i + 1] == c) ++i;
    } else if (c == '{' || c == '<') {
      open.push_back({name_before(text, i), line});
    } else if ((c == '}' || c == '>') && !open.empty()) {
      open.pop_back();
    }
  }
  if (open.empty()) return "";
  const OpenBlock& outermost = open.front();
  return detail::concat("the block '", outermost.name.empty() ? "" : outermost.name + " ",
                        "{' opened at line ", outermost.line,
                        " is still open here: is a '}' missing between line ", outermost.line,
                        " and line ", error_line, "?");
}

}  // namespace xtrain
