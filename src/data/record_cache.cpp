#include "data/record_cache.hpp"

#include <limits>
#include <numeric>

#include "xtrain/error.hpp"
#include "xtrain/random.hpp"

namespace xtrain {

RecordCache::RecordCache(std::size_t records, bool shuffle) : records_(records), shuffle_(shuffle) {
  XTRAIN_ASSERT(records > 0, "a cache of an empty database");
  XTRAIN_CHECK(records <= std::numeric_limits<std::uint32_t>::max(), "a database of ", records,
               " records is too large to cache (at most 2^32 - 1)");
  cached_.reserve(records);
}

void RecordCache::add(std::string_view key, std::string_view value) {
  XTRAIN_ASSERT(cached_.size() < records_, "more records cached than the database holds");
  cached_.emplace_back(std::string(key), std::string(value));
}

std::size_t RecordCache::record_at(std::uint64_t epoch, std::size_t position) {
  XTRAIN_ASSERT(position < records_ && (epoch == 0 || complete()), "record ", position,
                " of epoch ", epoch, " read from a cache of ", cached_.size());
  if (epoch == 0 || !shuffle_) return position;
  if (order_epoch_ != epoch) {
    order_.resize(records_);
    std::iota(order_.begin(), order_.end(), 0u);
    RandomStream random(derive_seed(shuffle_seed_, "epoch", epoch));
    for (std::size_t i = records_ - 1; i > 0; --i) {
      const std::size_t j = random.below(static_cast<std::uint32_t>(i + 1));
      std::swap(order_[i], order_[j]);
    }
    order_epoch_ = epoch;
  }
  return order_[position];
}

double estimated_cache_bytes(std::size_t records, std::size_t page_bytes) {
  // Two std::strings and their heap blocks' headers per record.
  constexpr double kPerRecord = 2 * (sizeof(std::string) + 16);
  return static_cast<double>(page_bytes) + kPerRecord * static_cast<double>(records);
}

void check_cache_fits(const std::string& where, const std::string& source, std::size_t records,
                      double cache_bytes, double machine_bytes) {
  XTRAIN_CHECK(machine_bytes <= 0 || cache_bytes <= machine_bytes / 2, where,
               ": data_param.cache would keep the ", records, " records of LMDB '", source,
               "' in memory, about ", cache_bytes / 1e9, " GB, more than half of this machine's ",
               machine_bytes / 1e9,
               " GB; remove cache (and shuffle, precache) to read the records from the LMDB as "
               "they are needed");
}

}  // namespace xtrain
