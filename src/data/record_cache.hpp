// RecordCache: an LMDB's records kept in memory (NVIDIA Caffe 0.17's
// data_param cache), in key order as the first epoch reads them, and the
// order each later epoch visits them in: key order, or with shuffle a
// permutation of its own, drawn from derive_seed(seed, "epoch", e) by a
// Fisher-Yates shuffle, so that any epoch's order can be had without
// replaying the ones before (exact resume jumps there).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xtrain {

class RecordCache {
 public:
  // For a database of `records` records; `shuffle`: epochs >= 1 are shuffled.
  RecordCache(std::size_t records, bool shuffle);

  void set_shuffle_seed(std::uint64_t seed) { shuffle_seed_ = seed; }
  bool shuffles() const { return shuffle_; }
  std::size_t records() const { return records_; }
  // Records cached so far (the first ones of the key order).
  std::size_t cached() const { return cached_.size(); }
  bool complete() const { return cached_.size() == records_; }
  // Appends the next record of the key order.
  void add(std::string_view key, std::string_view value);

  // The index (in key order) of the record at `position` of epoch `epoch`;
  // an epoch after the first needs the cache complete.
  std::size_t record_at(std::uint64_t epoch, std::size_t position);
  const std::string& key(std::size_t index) const { return cached_[index].first; }
  const std::string& value(std::size_t index) const { return cached_[index].second; }

 private:
  std::size_t records_;
  bool shuffle_;
  std::uint64_t shuffle_seed_ = 0;
  std::vector<std::pair<std::string, std::string>> cached_;
  std::uint64_t order_epoch_ = 0;  // the epoch order_ is for (0: none yet)
  std::vector<std::uint32_t> order_;
};

// What caching `records` records held in `page_bytes` of LMDB pages costs in
// memory: the pages' bytes (a little more than the keys and values) and two
// strings per record.
double estimated_cache_bytes(std::size_t records, std::size_t page_bytes);

// Throws xtrain::Error naming `where` and `source` when `cache_bytes` pass
// half of `machine_bytes` (as a prefetch that large is refused); a machine
// size of 0 or less (unknown) lets any cache pass.
void check_cache_fits(const std::string& where, const std::string& source, std::size_t records,
                      double cache_bytes, double machine_bytes);

}  // namespace xtrain
