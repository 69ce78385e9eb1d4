// DataLayer (type "Data"): batches of Datum records read from an LMDB.
//
// Tops: data (batch_size, C, H', W') with C x H x W the shape of the first
// record and H' x W' its size after transform_param's crop; optionally label
// (batch_size), the records' labels as floats.
//
// Records are read in key order, wrapping to the first after the last: the
// n-th forward (from 0) gets records (skip + n * batch_size + i) mod N, where
// skip is drawn once from [0, rand_skip) (0 without rand_skip).
//
// A prefetch thread reads and transforms the next `prefetch` batches while
// the net computes. Batch buffers cycle between two queues (free -> filled by
// the thread -> full -> copied to the tops by forward -> free), so nothing is
// allocated once training runs. An error in the thread (a corrupt record, a
// record whose shape differs from the first's) reaches the caller as an
// xtrain::Error thrown by the forward that would have used that batch.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "data/blocking_queue.hpp"
#include "data/data_transformer.hpp"
#include "data/datum_io.hpp"
#include "data/lmdb_database.hpp"
#include "xtrain/layer.hpp"

namespace xtrain {

class DataLayer : public Layer {
 public:
  explicit DataLayer(const LayerParameter& param) : Layer(param) {}
  ~DataLayer() override;

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override;
  void reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "Data"; }
  int exact_num_bottom_blobs() const override { return 0; }
  int min_top_blobs() const override { return 1; }
  int max_top_blobs() const override { return 2; }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

 private:
  struct Batch {
    std::vector<float> data;
    std::vector<float> labels;
    std::string error;  // set instead of data when the thread failed
  };

  void check_parameters() const;
  void start_prefetching();
  void stop_prefetching();
  void prefetch_loop();
  void fill_batch(Batch& batch);
  void advance_cursor();

  std::shared_ptr<LmdbDatabase> database_;
  std::unique_ptr<LmdbCursor> cursor_;
  std::unique_ptr<DataTransformer> transformer_;
  int batch_size_ = 0;
  bool output_labels_ = false;
  DatumShape record_shape_;  // of the first record; every record must match
  std::vector<int> data_shape_;

  std::vector<std::unique_ptr<Batch>> batches_;
  BlockingQueue<Batch*> free_batches_;
  BlockingQueue<Batch*> full_batches_;
  std::thread prefetch_thread_;
  std::atomic<bool> stopping_{false};
  bool started_ = false;
  std::string failure_;  // the prefetch thread's error, rethrown by every forward

  // Owned by the prefetch thread once it runs.
  RandomStream transform_random_;
  Datum datum_;
};

}  // namespace xtrain
