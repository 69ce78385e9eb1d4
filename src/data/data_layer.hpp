// DataLayer (type "Data"): batches of Datum records read from an LMDB.
//
// Tops: data (batch_size, C, H', W') with C x H x W the shape of the first
// record (decoded, for an encoded one) and H' x W' its size after
// transform_param's crop; optionally label (batch_size), the labels as
// floats. Every record must have the first one's shape; with a crop_size
// and no mean file, records of other sizes (at least the crop) are accepted
// too, as Caffe crops each image where it is.
//
// Records are read in key order, wrapping to the first after the last: the
// n-th forward (from 0) gets records (skip + n * batch_size + i) mod N, where
// skip is drawn once from [0, rand_skip) (0 without rand_skip). Encoded
// records (convert_imageset --encoded) are decoded as transform_param's
// force_color / force_gray say. The pipeline (prefetch, decode threads,
// deterministic augmentation, data wait) is PrefetchingDataLayer's.
//
// NVIDIA Caffe 0.17's data_param cache (TRAIN only, as there): the records
// are kept in memory as the first epoch reads them (precache: all of them
// at the first forward, before the first batch), and later epochs read
// them from there; with shuffle, each epoch after the first visits them in
// its own random order (a permutation seeded from the layer's stream and
// the epoch's number), so the n-th record of the source's order is still
// one record: epoch n / N, position n % N (N records; epoch 0 in key
// order). rand_skip skips the first records of that order. A cache that
// would fill more than half of the machine's memory is refused at setup.
// Without cache, shuffle has no effect (as in NVIDIA Caffe; a warning says
// so). threads counts as decode_threads when that is unset; parser_threads
// has no effect (one thread reads).
//
// Sharding (data-parallel training): as PrefetchingDataLayer says, replica
// (index, count) of data_shard() reads, for its batch k, records
// k * count * B + index * B + i of that sequence (the cursor jumps over the
// others), so the replicas' batches put together are the unsharded batch of
// count * B. The Net gives every layer its shard (NetOptions::data_shard);
// sharding only the TRAIN net is the caller's choice.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "data/prefetching_data_layer.hpp"
#include "data/record_cache.hpp"
#include "xtrain/datum_io.hpp"
#include "xtrain/lmdb_database.hpp"

namespace xtrain {

class DataLayer : public PrefetchingDataLayer {
 public:
  explicit DataLayer(const LayerParameter& param) : PrefetchingDataLayer(param) {}
  ~DataLayer() override;

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "Data"; }

 protected:
  // Checks data_param and opens its LMDB, with the cursor on the first
  // record; shared with the layers that read other records from an LMDB.
  void open_database();

  void start_reading() override;
  void read_record(Record& record) override;
  void skip_records(std::uint64_t count) override;
  void decode_record(const Record& record, Worker& worker, float* data,
                     float* label) const override;

  std::shared_ptr<LmdbDatabase> database_;
  std::unique_ptr<LmdbCursor> cursor_;  // the reader thread's once it runs
  std::string source_;

 private:
  void check_parameters() const;
  void advance_cursor();
  // data_param.cache / shuffle / precache / threads / parser_threads.
  void set_up_cache();
  // The cache holds records 0..index of the key order (read from the cursor).
  void cache_up_to(std::size_t index);

  DatumShape record_shape_;  // of the first record, decoded

  // data_param.cache in TRAIN, else null: the reader thread's once it runs.
  std::unique_ptr<RecordCache> cache_;
  bool precache_ = false;
  std::uint64_t position_ = 0;  // with the cache: the next record's index in the source's order
};

}  // namespace xtrain
