// Image list files, as convert_imageset and the ImageData layer read them:
// one image a line, "PATH LABEL", split at the LAST space so that paths may
// hold spaces ("my photos/cat 1.jpg 3" is path "my photos/cat 1.jpg", label 3).
//
// Caffe reads every line this way and takes atoi() of whatever follows the
// last space, so a line without a label silently becomes label 0. Here such
// lines are reported with their line number and left out instead:
//   - no space on the line,
//   - a label that is not a whole int ("3.5", "cat", out of range),
//   - an empty path.
// Empty lines (and lines of only blanks) are skipped without a word; a
// trailing '\r' (a list written on Windows) is ignored.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "xtrain/export.hpp"

namespace xtrain {

struct XTRAIN_API ImageListEntry {
  std::string path;  // as written in the list (before any root folder)
  int label = 0;
  int line_number = 0;  // 1-based, in the list file
};

struct XTRAIN_API MalformedListLine {
  int line_number = 0;
  std::string text;    // the line as read
  std::string reason;  // "no space between path and label", ...
};

struct XTRAIN_API ImageList {
  std::string source;  // the list file's path, for messages
  std::vector<ImageListEntry> entries;
  std::vector<MalformedListLine> malformed;

  // "list 'train.txt' line 17"
  std::string where(int line_number) const;
};

// Throws xtrain::Error naming the file if it cannot be opened.
XTRAIN_API ImageList read_image_list(const std::string& path);
XTRAIN_API ImageList parse_image_list(std::istream& input, const std::string& source);

// Parses one line (without its newline). Returns false and sets `reason`
// for a malformed line; an empty line is reported as malformed too, with
// an empty reason.
XTRAIN_API bool parse_image_list_line(const std::string& line, ImageListEntry* entry,
                                      std::string* reason);

// Fisher-Yates shuffle driven by a 64-bit Mersenne Twister seeded with
// `seed`, with its own unbiased bounded draws, so a seed gives the same
// order on every platform and standard library.
XTRAIN_API void shuffle_image_list(std::vector<ImageListEntry>* entries, std::uint64_t seed);

}  // namespace xtrain
