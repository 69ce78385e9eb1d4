#include "xtrain/image_list.hpp"

#include <charconv>
#include <fstream>
#include <limits>
#include <random>
#include <utility>

#include "xtrain/error.hpp"
#include "xtrain/input_file.hpp"

namespace xtrain {

std::string ImageList::where(int line_number) const {
  return "list '" + source + "' line " + std::to_string(line_number);
}

bool parse_image_list_line(const std::string& line, ImageListEntry* entry, std::string* reason) {
  reason->clear();
  std::string text = line;
  if (!text.empty() && text.back() == '\r') text.pop_back();
  if (text.find_first_not_of(" \t") == std::string::npos) return false;

  const std::size_t split = text.rfind(' ');
  if (split == std::string::npos) {
    *reason = "no space between path and label (write \"PATH LABEL\")";
    return false;
  }
  const std::string label_text = text.substr(split + 1);
  int label = 0;
  const char* first = label_text.data();
  const char* last = first + label_text.size();
  const auto [end, error] = std::from_chars(first, last, label);
  if (label_text.empty() || error != std::errc() || end != last) {
    *reason = label_text.empty() ? "no label after the last space"
              : error == std::errc::result_out_of_range
                  ? "label '" + label_text + "' is out of the int range"
                  : "label '" + label_text + "' is not an integer";
    return false;
  }
  if (split == 0) {
    *reason = "empty path before the label";
    return false;
  }
  entry->path = text.substr(0, split);
  entry->label = label;
  return true;
}

ImageList parse_image_list(std::istream& input, const std::string& source) {
  ImageList list;
  list.source = source;
  std::string line;
  std::string reason;
  for (int line_number = 1; std::getline(input, line); ++line_number) {
    ImageListEntry entry;
    if (parse_image_list_line(line, &entry, &reason)) {
      entry.line_number = line_number;
      list.entries.push_back(std::move(entry));
    } else if (!reason.empty()) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      list.malformed.push_back({line_number, line, reason});
    }
  }
  return list;
}

ImageList read_image_list(const std::string& path) {
  std::ifstream file = open_input_file(path, "the image list");
  ImageList list = parse_image_list(file, path);
  XTRAIN_CHECK(!file.bad(), "error reading the image list '", path, "'");
  return list;
}

namespace {

// A draw in [0, bound) without modulo bias: reject the top sliver of the
// 64-bit range that does not divide evenly by `bound`.
std::uint64_t draw_below(std::mt19937_64& engine, std::uint64_t bound) {
  const std::uint64_t limit =
      std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % bound;
  std::uint64_t value;
  do {
    value = engine();
  } while (value >= limit);
  return value % bound;
}

}  // namespace

void shuffle_image_list(std::vector<ImageListEntry>* entries, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  for (std::size_t i = entries->size(); i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(draw_below(engine, i));
    std::swap((*entries)[i - 1], (*entries)[j]);
  }
}

}  // namespace xtrain
