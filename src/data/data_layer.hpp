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
// Sharding (data-parallel training): as PrefetchingDataLayer says, replica
// (index, count) of data_shard() reads, for its batch k, records
// k * count * B + index * B + i of that sequence (the cursor jumps over the
// others), so the replicas' batches put together are the unsharded batch of
// count * B. The Net gives every layer its shard (NetOptions::data_shard);
// sharding only the TRAIN net is the caller's choice.
#pragma once

#include <memory>
#include <string>

#include "data/prefetching_data_layer.hpp"
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

  DatumShape record_shape_;  // of the first record, decoded
};

}  // namespace xtrain
