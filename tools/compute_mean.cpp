// compute_mean: the per-pixel mean image of an LMDB of Datum records, as
// Caffe's compute_image_mean computes it:
//   mean[c, h, w] = (1 / N) * sum over the N records of pixel[c, h, w],
// written as a BlobProto (.binaryproto) of shape (1, C, H, W) in the legacy
// num/channels/height/width fields with float data, which Caffe's and our
// Data layers read as mean_file. Also prints the per-channel means (the
// mean_value lines Caffe logs), which can stand in for a mean file.
//
//   compute_mean [FLAGS] INPUT_DB [OUTPUT_FILE]
//
// Encoded records (convert_imageset --encoded) are decoded with their own
// channel count, as Caffe's DecodeDatumNative does. Every record must have
// the shape of the first. The calling thread walks the database and hands
// batches of records to worker threads, each summing its share in double;
// the sums are merged at the end.
#include <gflags/gflags.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <opencv2/core.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "flag_help.hpp"
#include "progress_line.hpp"
#include "xtrain/blocking_queue.hpp"
#include "xtrain/datum_io.hpp"
#include "xtrain/error.hpp"
#include "xtrain/image_datum.hpp"
#include "xtrain/lmdb_database.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/mean_accumulator.hpp"
#include "xtrain/proto_io.hpp"

DEFINE_string(backend, "lmdb", "The database to read; only lmdb is supported");
DEFINE_int32(threads, 0, "Summing (and decoding) threads (0: one per core)");
DEFINE_double(progress_seconds, 5, "Seconds between progress lines");

namespace {

constexpr const char* kUsage =
    "Computes the mean image of an LMDB of Datum records.\n"
    "Usage:\n"
    "    compute_mean [FLAGS] INPUT_DB [OUTPUT_FILE]\n"
    "OUTPUT_FILE (e.g. mean.binaryproto) receives the (1, C, H, W) mean as a\n"
    "BlobProto; without it the per-channel means are only printed.";

constexpr std::size_t kRecordsPerBatch = 64;

struct Record {
  std::string key;
  std::string value;
};

struct Batch {
  std::size_t first_index = 0;  // of its first record, in key order
  std::vector<Record> records;
  std::size_t size = 0;  // records[0..size) are in use
};

// The pixels of one record as the accumulator takes them, with its shape.
class RecordPixels {
 public:
  void load(const Record& record, const std::string& source) {
    const std::string where = xtrain::describe_record(record.key, source);
    XTRAIN_CHECK(
        record.value.size() <= static_cast<std::size_t>(INT32_MAX) &&
            datum_.ParseFromArray(record.value.data(), static_cast<int>(record.value.size())),
        where, " is not a valid Datum (", record.value.size(),
        " bytes); the database is corrupt or was not written by a Caffe converter");
    if (datum_.encoded()) {
      image_ = xtrain::decode_image(datum_.data(), xtrain::ColorMode::kAsStored, where);
      shape_ = xtrain::DatumShape{image_.channels, image_.height, image_.width};
      bytes_ = image_.pixels.data();
      floats_ = nullptr;
      return;
    }
    xtrain::check_datum(datum_, record.key, source);
    shape_ = xtrain::datum_shape(datum_);
    if (!datum_.data().empty()) {
      bytes_ = reinterpret_cast<const std::uint8_t*>(datum_.data().data());
      floats_ = nullptr;
    } else {
      bytes_ = nullptr;
      floats_ = datum_.float_data().data();
    }
  }

  const xtrain::DatumShape& shape() const { return shape_; }
  void add_to(xtrain::MeanAccumulator* mean) const {
    if (bytes_) {
      mean->add(bytes_);
    } else {
      mean->add(floats_);
    }
  }

 private:
  xtrain::Datum datum_;
  xtrain::Image image_;
  xtrain::DatumShape shape_;
  const std::uint8_t* bytes_ = nullptr;
  const float* floats_ = nullptr;
};

// The first failure by record order, whichever thread met it.
class FirstFailure {
 public:
  void record(std::size_t index, const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failed_ || index < index_) {
      failed_ = true;
      index_ = index;
      message_ = message;
    }
    any_.store(true, std::memory_order_relaxed);
  }
  bool any() const { return any_.load(std::memory_order_relaxed); }
  void rethrow() const { XTRAIN_CHECK(!failed_, message_); }

 private:
  std::mutex mutex_;
  std::atomic<bool> any_{false};
  bool failed_ = false;
  std::size_t index_ = 0;
  std::string message_;
};

int thread_count() {
  if (FLAGS_threads > 0) return FLAGS_threads;
  const unsigned cores = std::thread::hardware_concurrency();
  return cores > 0 ? static_cast<int>(cores) : 1;
}

void compute_mean(const std::string& db_path, const std::string& output_path) {
  XTRAIN_CHECK(FLAGS_backend != "leveldb",
               "--backend=leveldb: LevelDB is not supported; use --backend=lmdb");
  XTRAIN_CHECK(FLAGS_backend == "lmdb", "unknown --backend=", FLAGS_backend,
               "; use --backend=lmdb");
  XTRAIN_CHECK(FLAGS_threads >= 0, "--threads=", FLAGS_threads, " must be >= 0 (0: one per core)");
  auto database = xtrain::LmdbDatabase::open_for_reading(db_path);
  const std::size_t total = database->num_records();
  XTRAIN_CHECK(total > 0, "LMDB '", db_path, "' holds no records; nothing to average");
  xtrain::LmdbCursor cursor(database);

  // The first record sets the shape every other one must have.
  const Record first{std::string(cursor.key()), std::string(cursor.value())};
  RecordPixels first_pixels;
  first_pixels.load(first, db_path);
  const xtrain::DatumShape shape = first_pixels.shape();
  XLOG(INFO) << "Averaging " << total << " records of " << shape.to_string()
             << " (channels x height x width) from '" << db_path << "'";

  const int threads = thread_count();
  cv::setNumThreads(0);  // our threads decode; OpenCV's pool would compete
  xtrain::BlockingQueue<std::unique_ptr<Batch>> full(2 * threads);
  xtrain::BlockingQueue<std::unique_ptr<Batch>> empty(2 * threads);
  for (int i = 0; i < 2 * threads; ++i) {
    auto batch = std::make_unique<Batch>();
    batch->records.resize(kRecordsPerBatch);
    empty.push(std::move(batch));
  }
  std::vector<xtrain::MeanAccumulator> sums(threads, xtrain::MeanAccumulator(shape));
  FirstFailure failure;
  auto sum_batches = [&](int thread) {
    RecordPixels pixels;
    std::unique_ptr<Batch> batch;
    while (full.pop(batch)) {
      for (std::size_t i = 0; i < batch->size && !failure.any(); ++i) {
        const Record& record = batch->records[i];
        try {
          pixels.load(record, db_path);
          XTRAIN_CHECK(pixels.shape() == shape, xtrain::describe_record(record.key, db_path),
                       " is ", pixels.shape().to_string(), " but the first record ('", first.key,
                       "') is ", shape.to_string(),
                       " (channels x height x width); a mean needs images of one size "
                       "(convert with --resize_width and --resize_height)");
          pixels.add_to(&sums[thread]);
        } catch (const std::exception& error) {
          failure.record(batch->first_index + i, error.what());
        }
      }
      empty.push(std::move(batch));
    }
  };
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) workers.emplace_back(sum_batches, t);

  xtrain::tools::ProgressLine progress(total, "records", FLAGS_progress_seconds);
  std::size_t read = 0;
  try {
    while (cursor.valid() && !failure.any()) {
      std::unique_ptr<Batch> batch;
      empty.pop(batch);
      batch->first_index = read;
      batch->size = 0;
      for (; batch->size < kRecordsPerBatch && cursor.valid(); cursor.next(), ++batch->size) {
        Record& record = batch->records[batch->size];
        record.key.assign(cursor.key());
        record.value.assign(cursor.value());
      }
      read += batch->size;
      full.push(std::move(batch));
      progress.update(read);
    }
  } catch (...) {
    full.close();
    for (std::thread& worker : workers) worker.join();
    throw;
  }
  full.close();
  for (std::thread& worker : workers) worker.join();
  failure.rethrow();

  xtrain::MeanAccumulator mean(shape);
  for (const xtrain::MeanAccumulator& part : sums) mean.merge(part);
  XTRAIN_ASSERT(mean.count() == total, "averaged ", mean.count(), " of ", total, " records");
  XLOG(INFO) << "Averaged " << total << " records in " << progress.elapsed_seconds() << " s ("
             << progress.rate(total) << " records/s)";
  if (!output_path.empty()) {
    XLOG(INFO) << "Write to " << output_path;
    xtrain::write_proto_to_binary_file(mean.to_blob_proto(), output_path);
  }
  const std::vector<double> channel_means = mean.channel_means();
  std::printf("Number of channels: %d\n", shape.channels);
  for (int c = 0; c < shape.channels; ++c) {
    std::printf("mean_value channel [%d]: %g\n", c, channel_means[c]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  return xtrain::tools::run_single_file_tool(
      argc, argv, kUsage, __FILE__, 1, 2,
      [](int count, char** args) { compute_mean(args[1], count == 3 ? args[2] : ""); });
}
