// PrefetchingDataLayer: the batch pipeline shared by Data, ImageData and AnnotatedData.
//
// Tops: data (batch_size, C, H', W'), the transformed images; optionally
// label (batch_size), the records' labels as floats, or, for a layer that
// outputs label rows (AnnotatedData's boxes), (1, 1, R, 1 + V): the R rows of
// V values its records gave, each prefixed with its image's index in the
// batch, in batch order; one row of -1 when no record gave a row (as SSD).
//
// Three kinds of thread cooperate so the net never waits for input:
//   - the reader (one thread) takes records from the source in order (an
//     LMDB's values, a list's lines) and fills a free batch's record slots:
//     cheap, sequential work that decides WHICH records a batch holds;
//   - the decode workers (data_param.decode_threads, else NVIDIA Caffe's
//     data_param.threads, default min(4, cores))
//     parse, decode and transform the slots of the batches the reader
//     filled, in parallel, each writing its images straight into the batch;
//   - forward() takes the batches in the order the reader filled them,
//     waits until every image of the next one is done (the "data wait"),
//     and makes the tops point at the batch's memory (no copy).
// There are prefetch + 1 batch buffers: the one the net is using, and up to
// data_param.prefetch loaded ahead. They cycle free -> read -> decoded ->
// in use -> free, so nothing is allocated once training runs.
//
// Determinism: record n of the source's order (after rand_skip and
// shuffling) is always the same record, and its random augmentation (mirror,
// crop) comes from its own RandomStream seeded with derive_seed(s, "record",
// n), where s is drawn once from the layer's stream: batches do not depend on
// the number of threads or on their scheduling.
//
// Sharding (data-parallel training, data_shard() = (index, count)): the
// source's order is cut into global batches of count * B records (B =
// batch_size), and this replica's batch k holds records
// k * count * B + index * B + i (i < B); the reader skips the others. The
// augmentation seed uses that global n, and s, rand_skip and shuffling come
// from the layer's stream, seeded alike on every replica: the count replicas'
// batches k, concatenated by index, are the unsharded layer's batch k with
// batch_size count * B, bit for bit. count = 1 reads every record.
//
// Errors (a damaged record, a missing image) reach the caller as the
// xtrain::Error thrown by the forward that would have used that batch (the
// first failing image of the batch, in batch order); every later forward
// throws it again.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/device_memory.hpp"
#include "data/data_transformer.hpp"
#include "xtrain/blocking_queue.hpp"
#include "xtrain/data_wait.hpp"
#include "xtrain/layer.hpp"

namespace xtrain {

class PrefetchingDataLayer : public Layer, public DataWaitReporter {
 public:
  ~PrefetchingDataLayer() override;

  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  int exact_num_bottom_blobs() const override { return 0; }
  int min_top_blobs() const override { return 1; }
  int max_top_blobs() const override { return 2; }

  double take_data_wait_seconds() override;

  // Exact resume: the records of the source's order the global batches have
  // used so far (count * B per batch of this replica; the same number on
  // every replica) and the layer's random stream as it was when reading started. Restoring replays
  // the source's order (shuffles included) up to that record, so the next batch holds the same
  // records with the same augmentation. Must happen before the first forward.
  void save_resume_state(LayerResumeState* state) const override;
  void restore_resume_state(const LayerResumeState& state) override;

  // Batches the reader has filled so far (the one in use, those loaded
  // ahead, and those consumed): for tests and diagnostics.
  std::uint64_t batches_read() const { return batches_read_.load(); }
  // Decode workers in use (known after setup).
  int decode_threads() const { return decode_threads_; }

 protected:
  explicit PrefetchingDataLayer(const LayerParameter& param);

  // One record as the reader hands it to a decode worker. The strings keep
  // their capacity from batch to batch.
  struct Record {
    std::string key;    // Data: the LMDB key
    std::string bytes;  // Data: the serialized Datum; ImageData: the image's path
    int label = 0;      // ImageData: the list's label
    int line = 0;       // ImageData: the list line
  };
  // What one decode worker reuses from record to record.
  struct Worker {
    RandomStream random;
    Datum datum;
    DataTransformer::Scratch scratch;
    std::vector<float> label_rows;  // label-row layers: this record's rows
  };

  // For the subclass's layer_setup, once it knows the images' shape (after
  // the transform): creates the batch buffers and shapes the tops.
  void allocate_batches(const DatumShape& output_shape, const BlobVec& top);
  // Called before allocate_batches by a layer whose records give a variable
  // number of label rows of `values` numbers each: decode_record then gets
  // label == nullptr and appends its rows to worker.label_rows.
  void output_label_rows(int values);
  // Whether decode_record draws random numbers: only then is worker.random
  // seeded for each record.
  virtual bool augments_at_random() const { return transformer_->uses_random(); }

  // Main thread, at the first forward, before any record is read (rand_skip,
  // shuffling: anything drawn from the layer's random stream).
  virtual void start_reading() = 0;
  // The reader thread: the next record, in order.
  virtual void read_record(Record& record) = 0;
  // Moves past the next `count` records as read_record would: on the main
  // thread when resuming, on the reader thread for other shards' records.
  // The default reads them; sources that can jump override it.
  virtual void skip_records(std::uint64_t count);
  // A decode worker: the record's image into `data` (output_shape values)
  // and its label into *label (when not null). Called concurrently from
  // several workers, so it may change only `worker`. worker.random is
  // already seeded for this record.
  virtual void decode_record(const Record& record, Worker& worker, float* data,
                             float* label) const = 0;

  // The machine's memory in bytes (0 or less when unknown); what the layer
  // holds in memory is refused past half of it.
  static double machine_memory_bytes();

  // Stops and joins the threads. Subclasses call it first in their
  // destructors: the threads call their virtual functions.
  void stop_prefetching();

  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

  std::unique_ptr<DataTransformer> transformer_;
  int batch_size_ = 0;
  bool output_labels_ = false;

 private:
  struct Batch {
    Blob data;
    Blob labels;
    float* data_ptr = nullptr;  // taken on the main thread, written by the workers
    float* label_ptr = nullptr;
    std::vector<Record> records;
    std::vector<std::vector<float>> item_label_rows;  // label-row layers, per item
    std::uint64_t first_record = 0;                   // index of item 0 in the source's order
    // Guarded by work_mutex_:
    int claimed = 0;     // items handed to workers
    int finished = 0;    // items done (or abandoned after an error)
    bool ready = false;  // finished, and its upload queued for a GPU net
    // GPU nets: where the net's stream let go of the batch (see recycle()),
    // and where the worker's stream has it on the device (see forward).
    device_memory::StreamMarker released_by_net;
    device_memory::StreamMarker uploaded;
    int failed_item = -1;
    std::string error;
  };

  void start_threads();
  void reader_loop();
  void worker_loop(int index);
  void decode_item(Batch& batch, int item, Worker& worker) const;
  void copy_to_device(Batch& batch) const;
  void recycle(Batch* batch);
  void gather_label_rows(Batch& batch) const;
  std::vector<int> label_rows_shape(int rows) const;

  std::vector<int> data_shape_;
  int label_row_values_ = 0;    // 0: one label per item
  std::size_t image_size_ = 0;  // values per transformed image
  int decode_threads_ = 1;
  int items_per_claim_ = 1;

  std::vector<std::unique_ptr<Batch>> batches_;
  BlockingQueue<Batch*> free_batches_;
  BlockingQueue<Batch*> read_batches_;  // in reading order, for forward()
  Batch* in_use_ = nullptr;             // the batch the tops point at

  std::mutex work_mutex_;
  std::condition_variable work_ready_;  // a batch to decode, or stopping
  std::condition_variable batch_done_;  // a batch's last item finished
  std::deque<Batch*> to_decode_;        // read batches with unclaimed items
  bool stopping_ = false;               // guarded by work_mutex_
  std::atomic<bool> stop_reader_{false};

  std::thread reader_;
  std::vector<std::thread> workers_;
  bool started_ = false;
  std::string failure_;  // rethrown by every forward after a failed batch
  std::uint64_t record_seed_ = 0;
  std::string reading_start_random_state_;  // random() before start_threads drew from it
  // Records of the source's order per global batch: count * batch_size.
  std::uint64_t global_batch_records() const;

  std::uint64_t records_consumed_ = 0;   // main thread: global records up to the batch in use
  std::uint64_t records_to_skip_ = 0;    // set by restore_resume_state
  std::uint64_t next_global_batch_ = 0;  // reader thread only: first record of the next one
  std::uint64_t source_position_ = 0;    // reader thread only: the source's next record
  std::atomic<std::uint64_t> batches_read_{0};
  std::atomic<std::int64_t> wait_nanoseconds_{0};
};

}  // namespace xtrain
