#include "data/prefetching_data_layer.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {
namespace {

// Enough workers to decode JPEGs as fast as a CPU net trains; more than the
// cores only adds switching.
int automatic_decode_threads() {
  const unsigned cores = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(cores, 1u, 4u));
}

}  // namespace

PrefetchingDataLayer::PrefetchingDataLayer(const LayerParameter& param) : Layer(param) {}

double PrefetchingDataLayer::machine_memory_bytes() {
  return static_cast<double>(::sysconf(_SC_PHYS_PAGES)) *
         static_cast<double>(::sysconf(_SC_PAGESIZE));
}

PrefetchingDataLayer::~PrefetchingDataLayer() { stop_prefetching(); }

void PrefetchingDataLayer::allocate_batches(const DatumShape& output_shape, const BlobVec& top) {
  const DataParameter& data = param_.data_param();
  XTRAIN_CHECK(data.prefetch() > 0, where(), ": data_param.prefetch must be at least 1");
  XTRAIN_ASSERT(batch_size_ > 0, "batch size not set before allocate_batches");
  output_labels_ = top.size() > 1;
  data_shape_ = {batch_size_, output_shape.channels, output_shape.height, output_shape.width};
  image_size_ = output_shape.count();
  // NVIDIA Caffe's data_param.threads (its transformer threads) stands in
  // for decode_threads when that is unset.
  decode_threads_ = data.decode_threads() > 0 ? static_cast<int>(data.decode_threads())
                    : data.threads() > 0      ? static_cast<int>(data.threads())
                                              : automatic_decode_threads();
  // A few claims per worker and batch: small enough to balance the load,
  // large enough that tiny images do not queue on the lock.
  items_per_claim_ = std::max(1, batch_size_ / (4 * decode_threads_));
  XLOG(INFO) << "output data size: " << batch_size_ << "," << output_shape.channels << ","
             << output_shape.height << "," << output_shape.width;

  // One batch in use by the net, `prefetch` loaded ahead: all of them are
  // held in memory, so a prefetch far past what fits is refused here, before
  // the machine runs out of memory (or swaps) allocating them.
  const double batch_bytes =
      static_cast<double>(batch_size_) * static_cast<double>(image_size_) * sizeof(float);
  const double held_bytes = batch_bytes * (static_cast<double>(data.prefetch()) + 1);
  const double machine_bytes = machine_memory_bytes();
  XTRAIN_CHECK(machine_bytes <= 0 || held_bytes <= machine_bytes / 2, where(),
               ": data_param.prefetch: ", data.prefetch(), " holds ", data.prefetch() + 1,
               " batches of ", batch_bytes / 1e6, " MB (", held_bytes / 1e9,
               " GB) in memory, more than half of this machine's ", machine_bytes / 1e9,
               " GB; lower prefetch (the default is 4)");
  for (unsigned i = 0; i < data.prefetch() + 1; ++i) {
    auto batch = std::make_unique<Batch>();
    batch->data.reshape(data_shape_);
    batch->labels.reshape(label_row_values_ > 0 ? label_rows_shape(1)
                                                : std::vector<int>{batch_size_});
    batch->records.resize(static_cast<std::size_t>(batch_size_));
    if (label_row_values_ > 0) batch->item_label_rows.resize(batch->records.size());
    recycle(batch.get());
    batches_.push_back(std::move(batch));
  }
  reshape({}, top);
}

void PrefetchingDataLayer::output_label_rows(int values) {
  XTRAIN_ASSERT(values > 0 && batches_.empty(), "label rows set after allocate_batches");
  label_row_values_ = values;
}

std::vector<int> PrefetchingDataLayer::label_rows_shape(int rows) const {
  return {1, 1, rows, 1 + label_row_values_};
}

void PrefetchingDataLayer::reshape(const BlobVec&, const BlobVec& top) {
  top[0]->reshape(data_shape_);
  if (!output_labels_) return;
  if (label_row_values_ == 0) {
    top[1]->reshape(std::vector<int>{batch_size_});
  } else {
    top[1]->reshape(in_use_ != nullptr ? in_use_->labels.shape() : label_rows_shape(1));
  }
}

// Main thread: the rows' count is known only once every item is decoded,
// and the label blob is reshaped where its device copy is used.
void PrefetchingDataLayer::gather_label_rows(Batch& batch) const {
  std::size_t rows = 0;
  for (const std::vector<float>& item : batch.item_label_rows) rows += item.size();
  rows /= static_cast<std::size_t>(label_row_values_);
  batch.labels.reshape(label_rows_shape(std::max<int>(1, static_cast<int>(rows))));
  float* out = batch.labels.mutable_cpu_data();
  if (rows == 0) {
    std::fill(out, out + batch.labels.count(), -1.0f);
    return;
  }
  for (std::size_t item = 0; item < batch.item_label_rows.size(); ++item) {
    const std::vector<float>& values = batch.item_label_rows[item];
    for (std::size_t start = 0; start < values.size();
         start += static_cast<std::size_t>(label_row_values_)) {
      *out++ = static_cast<float>(item);
      out =
          std::copy_n(values.begin() + static_cast<std::ptrdiff_t>(start), label_row_values_, out);
    }
  }
}

// Main thread only: the pointers are taken here so that a device-side head
// is brought back to the host on the thread that owns the device.
void PrefetchingDataLayer::recycle(Batch* batch) {
  // Kernels queued on this thread's stream may still read the batch's device
  // copy (conv1's weight gradient reads its bottom): the next upload into it
  // waits for this point of the stream.
  if (device().is_gpu()) batch->released_by_net.record(device().id);
  batch->data_ptr = batch->data.mutable_cpu_data();
  batch->label_ptr =
      output_labels_ && label_row_values_ == 0 ? batch->labels.mutable_cpu_data() : nullptr;
  free_batches_.push(batch);
}

double PrefetchingDataLayer::take_data_wait_seconds() {
  return static_cast<double>(wait_nanoseconds_.exchange(0)) * 1e-9;
}

// Started on the first forward rather than in setup, so that a seed given to
// the layer after setup (by the net or the solver) still decides the
// augmentation and rand_skip.
void PrefetchingDataLayer::start_threads() {
  const DataShard& shard = data_shard();
  XTRAIN_CHECK(shard.count >= 1 && shard.index >= 0 && shard.index < shard.count, where(),
               ": data shard ", shard.index, " of ", shard.count,
               " does not exist; need 0 <= index < count");
  reading_start_random_state_ = random().state();
  const std::uint64_t high = random().engine()();
  const std::uint64_t low = random().engine()();
  record_seed_ = (high << 32) | low;
  start_reading();
  if (records_to_skip_ > 0) {
    XLOG(INFO) << where() << ": resuming after " << records_to_skip_ << " records";
    skip_records(records_to_skip_);
    next_global_batch_ = records_to_skip_;
    source_position_ = records_to_skip_;
    records_to_skip_ = 0;
  }
  started_ = true;
  reader_ = std::thread([this] { reader_loop(); });
  for (int i = 0; i < decode_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

std::uint64_t PrefetchingDataLayer::global_batch_records() const {
  return static_cast<std::uint64_t>(data_shard().count) * static_cast<std::uint64_t>(batch_size_);
}

void PrefetchingDataLayer::skip_records(std::uint64_t count) {
  Record scratch;
  for (std::uint64_t i = 0; i < count; ++i) read_record(scratch);
}

void PrefetchingDataLayer::save_resume_state(LayerResumeState* state) const {
  Layer::save_resume_state(state);
  state->set_records_consumed(records_consumed_);
  state->set_reader_random_state(started_ ? reading_start_random_state_ : random().state());
}

void PrefetchingDataLayer::restore_resume_state(const LayerResumeState& state) {
  XTRAIN_CHECK(!started_, where(),
               ": cannot move to a resumed position after reading started; restore the solver "
               "state before the first forward");
  Layer::restore_resume_state(state);
  if (state.has_reader_random_state()) random().set_state(state.reader_random_state());
  records_to_skip_ = state.records_consumed();
  records_consumed_ = state.records_consumed();
}

void PrefetchingDataLayer::stop_prefetching() {
  stop_reader_ = true;
  {
    std::lock_guard<std::mutex> lock(work_mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  batch_done_.notify_all();
  free_batches_.close();
  read_batches_.close();
  if (reader_.joinable()) reader_.join();
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
  workers_.clear();
}

void PrefetchingDataLayer::reader_loop() {
  Batch* batch = nullptr;
  while (!stop_reader_ && free_batches_.pop(batch)) {
    // This replica's slice of the next global batch.
    batch->first_record = next_global_batch_ + static_cast<std::uint64_t>(data_shard().index) *
                                                   static_cast<std::uint64_t>(batch_size_);
    next_global_batch_ += global_batch_records();
    batch->claimed = 0;
    batch->finished = 0;
    batch->ready = false;
    batch->failed_item = -1;
    batch->error.clear();
    std::string error;
    try {
      if (batch->first_record > source_position_) {
        skip_records(batch->first_record - source_position_);
      }
      for (Record& record : batch->records) read_record(record);
      source_position_ = batch->first_record + static_cast<std::uint64_t>(batch_size_);
    } catch (const std::exception& caught) {
      error = caught.what();
    } catch (...) {
      error = where() + ": unknown error while reading records";
    }
    ++batches_read_;
    if (!error.empty()) {
      // The source's position is unknown now: this batch fails and no more follow.
      {
        std::lock_guard<std::mutex> lock(work_mutex_);
        batch->error = error;
        batch->failed_item = 0;
        batch->finished = batch_size_;
        batch->ready = true;
      }
      batch_done_.notify_all();
      read_batches_.push(batch);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(work_mutex_);
      to_decode_.push_back(batch);
    }
    work_ready_.notify_all();
    read_batches_.push(batch);
  }
}

void PrefetchingDataLayer::worker_loop(int index) {
  (void)index;
  Worker worker;
  for (;;) {
    Batch* batch = nullptr;
    int begin = 0;
    int end = 0;
    {
      std::unique_lock<std::mutex> lock(work_mutex_);
      work_ready_.wait(lock, [this] { return stopping_ || !to_decode_.empty(); });
      if (stopping_) return;
      batch = to_decode_.front();
      begin = batch->claimed;
      end = std::min(batch_size_, begin + items_per_claim_);
      batch->claimed = end;
      if (end == batch_size_) to_decode_.pop_front();
    }
    int failed_item = -1;
    std::string error;
    for (int item = begin; item < end && failed_item < 0; ++item) {
      try {
        decode_item(*batch, item, worker);
      } catch (const std::exception& caught) {
        failed_item = item;
        error = caught.what();
      } catch (...) {
        failed_item = item;
        error = where() + ": unknown error while decoding a record";
      }
    }
    bool done = false;
    {
      std::lock_guard<std::mutex> lock(work_mutex_);
      // The batch reports its first failing item, whichever worker saw it first.
      if (failed_item >= 0 && (batch->failed_item < 0 || failed_item < batch->failed_item)) {
        batch->failed_item = failed_item;
        batch->error = std::move(error);
      }
      batch->finished += end - begin;
      done = batch->finished == batch_size_;
    }
    if (done) {
      copy_to_device(*batch);
      {
        std::lock_guard<std::mutex> lock(work_mutex_);
        batch->ready = true;
      }
      batch_done_.notify_all();
    }
  }
}

// For a GPU net, the worker that finished a batch queues its copy to the
// device on its own stream while the net computes; forward() makes the net's
// stream wait for it, without blocking either thread.
void PrefetchingDataLayer::copy_to_device(Batch& batch) const {
  if (!device().is_gpu() || !batch.error.empty()) return;
  try {
    use_device(device());
    batch.released_by_net.make_this_thread_wait();
    batch.data.gpu_data();
    if (output_labels_ && label_row_values_ == 0) batch.labels.gpu_data();
    batch.uploaded.record(device().id);
  } catch (const std::exception& caught) {
    batch.error = where() + ": copying a batch to " + device().to_string() + ": " + caught.what();
  }
}

void PrefetchingDataLayer::decode_item(Batch& batch, int item, Worker& worker) const {
  const std::uint64_t record_index = batch.first_record + static_cast<std::uint64_t>(item);
  if (augments_at_random()) {
    worker.random.reseed(derive_seed(record_seed_, "record", record_index));
  }
  worker.label_rows.clear();
  decode_record(batch.records[static_cast<std::size_t>(item)], worker,
                batch.data_ptr + static_cast<std::size_t>(item) * image_size_,
                batch.label_ptr != nullptr ? batch.label_ptr + item : nullptr);
  if (label_row_values_ > 0) {
    XTRAIN_ASSERT(worker.label_rows.size() % static_cast<std::size_t>(label_row_values_) == 0,
                  "a record gave a partial label row");
    batch.item_label_rows[static_cast<std::size_t>(item)].swap(worker.label_rows);
  }
}

void PrefetchingDataLayer::forward_cpu(const BlobVec&, const BlobVec& top) {
  if (!failure_.empty()) throw Error(failure_);
  if (!started_) start_threads();

  const auto wait_start = std::chrono::steady_clock::now();
  Batch* batch = nullptr;
  const bool popped = read_batches_.pop(batch);
  XTRAIN_ASSERT(popped, "the batch queue closed while the layer is alive");
  {
    std::unique_lock<std::mutex> lock(work_mutex_);
    batch_done_.wait(lock, [&] { return stopping_ || batch->ready; });
  }
  wait_nanoseconds_ += std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - wait_start)
                           .count();
  if (!batch->error.empty()) {
    failure_ = batch->error;
    throw Error(failure_);
  }

  records_consumed_ += global_batch_records();
  // The net's kernels, queued after this, run once the upload has.
  if (device().is_gpu()) batch->uploaded.make_this_thread_wait();
  top[0]->share_data(batch->data);
  if (output_labels_ && label_row_values_ > 0) {
    gather_label_rows(*batch);
    top[1]->reshape(batch->labels.shape());
  }
  if (output_labels_) top[1]->share_data(batch->labels);
  // The previous batch is free only now that no top points at it.
  if (in_use_ != nullptr) recycle(in_use_);
  in_use_ = batch;
}

}  // namespace xtrain
