#include "interchange/darknet_cfg.hpp"

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "xtrain/error.hpp"

namespace xtrain::interchange {
namespace {

// Darknet's section names and their short aliases.
std::string section_type(const std::string& name) {
  static const std::map<std::string, std::string> aliases = {{"net", "net"},
                                                             {"network", "net"},
                                                             {"convolutional", "convolutional"},
                                                             {"conv", "convolutional"},
                                                             {"maxpool", "maxpool"},
                                                             {"max", "maxpool"},
                                                             {"avgpool", "avgpool"},
                                                             {"avg", "avgpool"},
                                                             {"route", "route"},
                                                             {"shortcut", "shortcut"},
                                                             {"upsample", "upsample"},
                                                             {"yolo", "yolo"},
                                                             {"softmax", "softmax"},
                                                             {"soft", "softmax"}};
  const auto found = aliases.find(name);
  return found == aliases.end() ? std::string() : found->second;
}

std::string without_blanks(const std::string& line) {
  std::string kept;
  for (char c : line) {
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') kept += c;
  }
  return kept;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) return parts;
    start = comma + 1;
  }
}

// All of `text` as an integer in [-2^30, 2^30]; nullopt when it is not one.
std::optional<int> whole_integer(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < -(1L << 30) || value > (1L << 30)) {
    return std::nullopt;
  }
  return static_cast<int>(value);
}

// All of `text` as a float; nullopt when it is not one.
std::optional<float> whole_number(const std::string& text) {
  char* end = nullptr;
  const float value = std::strtof(text.c_str(), &end);
  if (text.empty() || *end != '\0') return std::nullopt;
  return value;
}

}  // namespace

std::vector<DarknetSection> parse_darknet_sections(const std::string& text,
                                                   const std::string& source,
                                                   std::vector<std::string>* notes) {
  std::vector<DarknetSection> sections;
  std::istringstream lines(text);
  std::string raw;
  int line = 0;
  while (std::getline(lines, raw)) {
    ++line;
    const std::string content = without_blanks(raw);
    if (content.empty() || content[0] == '#' || content[0] == ';') continue;
    if (content[0] == '[') {
      XTRAIN_CHECK(content.back() == ']', "'", source, "' line ", line, ": '", content,
                   "' opens a section without closing it; write [type] alone on its line");
      const std::string name = content.substr(1, content.size() - 2);
      const std::string type = section_type(name);
      XTRAIN_CHECK(!type.empty(), "'", source, "' line ", line, ": section [", name,
                   "] is not converted; xtrain reads [net], [convolutional], [maxpool], "
                   "[avgpool], [route], [shortcut], [upsample], [yolo] and [softmax]");
      XTRAIN_CHECK(sections.empty() == (type == "net"), "'", source, "' line ", line, ": [", name,
                   "] ",
                   type == "net" ? "after the first section; [net] comes once, first"
                                 : "before [net]; a cfg starts with [net] (the input's size)");
      DarknetSection section;
      section.type = type;
      section.line = line;
      section.index = static_cast<int>(sections.size()) - 1;
      sections.push_back(section);
      continue;
    }
    XTRAIN_CHECK(!sections.empty(), "'", source, "' line ", line, ": '", content,
                 "' comes before the first section; a cfg starts with [net]");
    const std::size_t equals = content.find('=');
    XTRAIN_CHECK(equals != std::string::npos && equals > 0, "'", source, "' line ", line, ": '",
                 content, "' is not key=value");
    const std::string key = content.substr(0, equals);
    auto& options = sections.back().options;
    const auto previous = options.find(key);
    if (previous != options.end()) {
      notes->push_back("'" + source + "' line " + std::to_string(line) + ": '" + key +
                       "' is given again in this [" + sections.back().type +
                       "]; its first value (line " + std::to_string(previous->second.line) +
                       ") is used, as Darknet does");
      continue;
    }
    options[key] = {content.substr(equals + 1), line};
  }
  XTRAIN_CHECK(!sections.empty(), "'", source,
               "' has no sections; a Darknet cfg starts with [net]");
  return sections;
}

DarknetSectionReader::DarknetSectionReader(const DarknetSection& section, const std::string& source)
    : section_(section), source_(source) {}

bool DarknetSectionReader::has(const std::string& key) const {
  return section_.options.count(key) != 0;
}

const DarknetOption* DarknetSectionReader::find(const std::string& key) {
  read_.insert(key);
  const auto found = section_.options.find(key);
  return found == section_.options.end() ? nullptr : &found->second;
}

template <typename Value>
Value DarknetSectionReader::one(const std::string& key, Value fallback,
                                std::optional<Value> (*read)(const std::string&),
                                const char* kind) {
  const DarknetOption* option = find(key);
  if (option == nullptr) return fallback;
  const std::optional<Value> value = read(option->value);
  XTRAIN_CHECK(value.has_value(), where(key), ": '", option->value, "' is not ", kind);
  return *value;
}

int DarknetSectionReader::integer(const std::string& key, int fallback) {
  return one(key, fallback, whole_integer, "an integer");
}

float DarknetSectionReader::number(const std::string& key, float fallback) {
  return one(key, fallback, whole_number, "a number");
}

std::string DarknetSectionReader::text(const std::string& key, const std::string& fallback) {
  const DarknetOption* option = find(key);
  return option == nullptr ? fallback : option->value;
}

template <typename Value>
std::vector<Value> DarknetSectionReader::list(const std::string& key,
                                              std::optional<Value> (*read)(const std::string&),
                                              const char* kind) {
  const DarknetOption* option = find(key);
  std::vector<Value> values;
  if (option == nullptr) return values;
  for (const std::string& part : split_commas(option->value)) {
    const std::optional<Value> value = read(part);
    XTRAIN_CHECK(value.has_value(), where(key), ": '", option->value, "' is not a list of ", kind,
                 " (a,b,c)");
    values.push_back(*value);
  }
  return values;
}

std::vector<int> DarknetSectionReader::integers(const std::string& key) {
  return list(key, whole_integer, "integers");
}

std::vector<float> DarknetSectionReader::numbers(const std::string& key) {
  return list(key, whole_number, "numbers");
}

void DarknetSectionReader::skip(const std::string& key) { read_.insert(key); }

std::string DarknetSectionReader::where() const {
  std::ostringstream text;
  text << "'" << source_ << "' line " << section_.line << ", [" << section_.type << "]";
  if (section_.index >= 0) text << " (layer " << section_.index << ")";
  return text.str();
}

std::string DarknetSectionReader::where(const std::string& key) const {
  const auto found = section_.options.find(key);
  std::ostringstream text;
  text << "'" << source_ << "' line "
       << (found == section_.options.end() ? section_.line : found->second.line) << ", ["
       << section_.type << "]";
  if (section_.index >= 0) text << " (layer " << section_.index << ")";
  text << " key '" << key << "'";
  return text.str();
}

void DarknetSectionReader::finish() const {
  for (const auto& [key, option] : section_.options) {
    if (read_.count(key) != 0) continue;
    std::string known;
    for (const std::string& name : read_) known += (known.empty() ? "" : ", ") + name;
    XTRAIN_CHECK(false, where(key), ": '", key, "=", option.value,
                 "' is not converted (it would change the net, or xtrain does not know it); [",
                 section_.type, "] takes ", known);
  }
}

}  // namespace xtrain::interchange
