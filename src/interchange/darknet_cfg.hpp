// A Darknet .cfg as sections of keys, and typed, checked reads of the keys.
//
// The format, as Darknet's parser reads it: every space, tab and line end is
// removed from a line first ("mask = 0, 1" is "mask=0,1"); an empty line or
// one starting with '#' or ';' is skipped; "[type]" opens a section; any
// other line is key=value in the open section. The first section is [net]
// (or [network]); the others are the net's layers, numbered from 0, which
// [route] and [shortcut] refer to.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace xtrain::interchange {

struct DarknetOption {
  std::string value;
  int line = 0;
};

struct DarknetSection {
  std::string type;  // without brackets, aliases resolved: "convolutional", "maxpool", ...
  int line = 0;      // of the "[type]" line
  int index = -1;    // the layer's number; -1 for [net]
  std::map<std::string, DarknetOption> options;
};

// The sections of cfg text; `source` names it in errors. Throws xtrain::Error
// (source, line) for a line outside any section, a line without '=', and a
// text without a leading [net]. A key given again in a section keeps its
// first value, as Darknet reads it, with a line in `notes`.
std::vector<DarknetSection> parse_darknet_sections(const std::string& text,
                                                   const std::string& source,
                                                   std::vector<std::string>* notes);

// Reads one section's keys. Each read marks its key as known; finish()
// throws for a key nothing read, so a key that would change the net is never
// dropped in silence.
class DarknetSectionReader {
 public:
  DarknetSectionReader(const DarknetSection& section, const std::string& source);

  bool has(const std::string& key) const;
  int integer(const std::string& key, int fallback);
  float number(const std::string& key, float fallback);
  std::string text(const std::string& key, const std::string& fallback);
  // "a,b,c"; empty when the key is absent.
  std::vector<int> integers(const std::string& key);
  std::vector<float> numbers(const std::string& key);
  // Keys that are read elsewhere or knowingly left out.
  void skip(const std::string& key);

  // "'file' line 12, [convolutional] (layer 3)": for errors about the section.
  std::string where() const;
  // The same at the line of `key` ("... key 'size'").
  std::string where(const std::string& key) const;
  // Throws naming the first key not read and the keys this section takes.
  void finish() const;

  const DarknetSection& section() const { return section_; }

 private:
  const DarknetOption* find(const std::string& key);
  // The value of `key` read by `read` (whole_integer, whole_number), or
  // `fallback` when the key is absent; `kind` names it in the error.
  template <typename Value>
  Value one(const std::string& key, Value fallback,
            std::optional<Value> (*read)(const std::string&), const char* kind);
  // The comma-separated values of `key`, each read by `read`; `kind` names
  // them in the error about a part that is not one.
  template <typename Value>
  std::vector<Value> list(const std::string& key, std::optional<Value> (*read)(const std::string&),
                          const char* kind);
  const DarknetSection& section_;
  const std::string source_;
  std::set<std::string> read_;
};

}  // namespace xtrain::interchange
