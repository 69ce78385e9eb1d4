#include "core/brace_mistake_hint.hpp"

#include <google/protobuf/descriptor.h>

#include <cctype>
#include <optional>
#include <vector>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

using google::protobuf::Descriptor;

struct Block {
  std::string field;  // the field before '{' ("layer", "convolution_param"); may be ""
  std::string name;   // its `name: "..."` when it has one (a layer's name)
  int open_line = 0;
  int close_line = 0;                // 0 while open
  const Descriptor* type = nullptr;  // null when the field is unknown
};

// The type of the message a field of `outer` named `field` holds, or null.
const Descriptor* field_type(const Descriptor* outer, const std::string& field) {
  if (outer == nullptr) return nullptr;
  const auto* descriptor = outer->FindFieldByName(field);
  return descriptor != nullptr ? descriptor->message_type() : nullptr;
}

bool has_field(const Descriptor* type, const std::string& field) {
  return type != nullptr && type->FindFieldByName(field) != nullptr;
}

// `layer "conv1"`, `convolution_param`, `the block '{'`.
std::string describe(const Block& block) {
  std::string text = block.field.empty() ? "the block '{'" : block.field;
  if (!block.name.empty()) text += " \"" + block.name + "\"";
  return text;
}

// What the text holds up to the parser's error position: the blocks still
// open (outermost first) and the block closed last.
struct BlocksAtError {
  std::vector<Block> open;
  std::optional<Block> last_closed;
  // The first character at or after the error position that is not a
  // blank ('\0' at the end of the text).
  char next_char = '\0';
  int next_char_line = 0;
};

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ||
         c == '+';
}

BlocksAtError scan_to(const std::string& text, const Descriptor& root, int error_line,
                      int error_column) {
  BlocksAtError result;
  // The last two tokens before the current one: a word (identifier or
  // number), a quoted string (kept unquoted), or one punctuation character.
  struct Token {
    enum Kind { kNone, kWord, kString, kPunct } kind = kNone;
    std::string text;
  };
  Token before_last, last;
  auto push_token = [&](Token token) {
    // `name: "conv1"` directly inside a block names it.
    if (token.kind == Token::kString && last.kind == Token::kPunct && last.text == ":" &&
        before_last.kind == Token::kWord && before_last.text == "name" && !result.open.empty() &&
        result.open.back().name.empty()) {
      result.open.back().name = token.text;
    }
    before_last = std::move(last);
    last = std::move(token);
  };

  int line = 1;
  int column = 0;
  std::size_t i = 0;
  auto advance = [&] {  // over text[i], counting columns as protobuf does
    if (text[i] == '\n') {
      ++line;
      column = 0;
    } else if (text[i] == '\t') {
      column += 8 - column % 8;
    } else {
      ++column;
    }
    ++i;
  };
  auto before_error = [&] {
    return i < text.size() && (line < error_line || (line == error_line && column < error_column));
  };
  while (before_error()) {
    const char c = text[i];
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') advance();
    } else if (c == '"' || c == '\'') {
      // A quoted string, with backslash escapes, ends at its quote or the line.
      std::string value;
      advance();
      while (i < text.size() && text[i] != c && text[i] != '\n') {
        if (text[i] == '\\' && i + 1 < text.size()) advance();
        value += text[i];
        advance();
      }
      if (i < text.size() && text[i] == c) advance();
      push_token({Token::kString, value});
    } else if (word_char(c)) {
      std::string word;
      while (i < text.size() && word_char(text[i])) {
        word += text[i];
        advance();
      }
      push_token({Token::kWord, word});
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      advance();
    } else {
      if (c == '{' || c == '<') {
        Block block;
        // `field {` or `field: {`
        if (last.kind == Token::kWord) {
          block.field = last.text;
        } else if (last.kind == Token::kPunct && last.text == ":" &&
                   before_last.kind == Token::kWord) {
          block.field = before_last.text;
        }
        block.open_line = line;
        block.type = field_type(result.open.empty() ? &root : result.open.back().type, block.field);
        result.open.push_back(block);
      } else if ((c == '}' || c == '>') && !result.open.empty()) {
        result.last_closed = result.open.back();
        result.last_closed->close_line = line;
        result.open.pop_back();
      }
      push_token({Token::kPunct, std::string(1, c)});
      advance();
    }
  }
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) advance();
  result.next_char = i < text.size() ? text[i] : '\0';
  result.next_char_line = line;
  return result;
}

// "X" from protobuf's 'Message type "T" has no field named "X".', or "".
std::string unknown_field(const std::string& message) {
  const std::string sign = "has no field named \"";
  const std::size_t start = message.find(sign);
  if (start == std::string::npos) return "";
  const std::size_t begin = start + sign.size();
  const std::size_t end = message.find('"', begin);
  return end == std::string::npos ? "" : message.substr(begin, end - begin);
}

std::string not_closed(const std::vector<Block>& open, std::size_t index, int error_line) {
  const Block& block = open[index];
  std::string where = describe(block);
  // A block inside a layer says which layer.
  for (std::size_t outer = index; outer-- > 0;) {
    if (!open[outer].name.empty()) {
      where += " (in " + describe(open[outer]) + ")";
      break;
    }
  }
  return detail::concat(where, " opened at line ", block.open_line, " is not closed before line ",
                        error_line, ": is a '}' missing between line ", block.open_line,
                        " and line ", error_line, "?");
}

}  // namespace

std::string brace_mistake_hint(const std::string& text, const Descriptor& root,
                               const TextParseError& error) {
  const BlocksAtError blocks = scan_to(text, root, error.line, error.column);
  const std::vector<Block>& open = blocks.open;

  const std::string field = unknown_field(error.message);
  if (!field.empty()) {
    // The field belongs to a block further out: the blocks inside that one
    // were meant to be closed before it.
    for (std::size_t depth = open.size(); depth-- > 0;) {
      const Descriptor* outer = depth == 0 ? &root : open[depth - 1].type;
      if (has_field(outer, field)) return not_closed(open, depth, error.line);
    }
    // The field belongs to the block just closed: its '}' came too early.
    const std::optional<Block>& closed = blocks.last_closed;
    if (closed && has_field(closed->type, field)) {
      return detail::concat("'", field, "' belongs in ", describe(*closed), " (opened at line ",
                            closed->open_line, "), but the '}' at line ", closed->close_line,
                            " closed it: is that '}' one too many?");
    }
    return "";
  }

  // A '}' where the top level expects a field name closes nothing.
  if (open.empty() && (blocks.next_char == '}' || blocks.next_char == '>')) {
    std::string hint = detail::concat("the '", blocks.next_char, "' at line ",
                                      blocks.next_char_line, " closes no block");
    if (blocks.last_closed) {
      hint += detail::concat(" (the last one, ", describe(*blocks.last_closed), " opened at line ",
                             blocks.last_closed->open_line, ", was closed at line ",
                             blocks.last_closed->close_line, ")");
    }
    return hint + ": remove it, or add the '{' it was meant to close";
  }

  // The text ends inside a block.
  if (!open.empty() && blocks.next_char == '\0') {
    return detail::concat(
        describe(open.front()), " opened at line ", open.front().open_line,
        " is not closed at the end of the text",
        open.size() > 1 ? detail::concat(" (", open.size(), " blocks are open)") : std::string(),
        ": is a '}' missing?");
  }
  return "";
}

}  // namespace xtrain
