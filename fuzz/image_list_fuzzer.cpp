// An image list file ("PATH LABEL" a line) as convert_imageset and the
// ImageData layer read it: parsed from the bytes, then checked against what
// the parser promises -- each entry's line re-parses to the same entry,
// entries and malformed lines come in line order and never share a line,
// and the seeded shuffle is a permutation that depends on the seed only.
#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "xtrain/image_list.hpp"

XTRAIN_FUZZ_INITIALIZE

namespace {

// A broken promise is a finding: abort, and libFuzzer keeps the input.
void require(bool holds) {
  if (!holds) std::abort();
}

bool same_entries(const std::vector<xtrain::ImageListEntry>& a,
                  const std::vector<xtrain::ImageListEntry>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
    return x.path == y.path && x.label == y.label && x.line_number == y.line_number;
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  xtrain_fuzz::expect_only_xtrain_errors([&] {
    std::istringstream input(text);
    const xtrain::ImageList list = xtrain::parse_image_list(input, "fuzzed.txt");
    int last_line = 0;
    std::size_t next_malformed = 0;
    for (const xtrain::ImageListEntry& entry : list.entries) {
      require(!entry.path.empty() && entry.line_number > last_line);
      while (next_malformed < list.malformed.size() &&
             list.malformed[next_malformed].line_number < entry.line_number) {
        ++next_malformed;
      }
      require(next_malformed == list.malformed.size() ||
              list.malformed[next_malformed].line_number != entry.line_number);
      last_line = entry.line_number;
      xtrain::ImageListEntry again;
      std::string reason;
      require(xtrain::parse_image_list_line(entry.path + " " + std::to_string(entry.label), &again,
                                            &reason));
      require(again.path == entry.path && again.label == entry.label);
    }
    for (std::size_t i = 1; i < list.malformed.size(); ++i) {
      require(list.malformed[i].line_number > list.malformed[i - 1].line_number);
    }
    const std::uint64_t seed = size > 0 ? data[0] : 0;
    std::vector<xtrain::ImageListEntry> shuffled = list.entries;
    std::vector<xtrain::ImageListEntry> shuffled_again = list.entries;
    xtrain::shuffle_image_list(&shuffled, seed);
    xtrain::shuffle_image_list(&shuffled_again, seed);
    require(same_entries(shuffled, shuffled_again));
    auto by_line = [](const auto& x, const auto& y) { return x.line_number < y.line_number; };
    std::sort(shuffled.begin(), shuffled.end(), by_line);
    require(same_entries(shuffled, list.entries));
  });
  return 0;
}
