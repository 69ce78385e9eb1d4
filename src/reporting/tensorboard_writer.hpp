// TensorBoard's event files, written without TensorFlow: each record is an
// Event message (proto/tensorboard.proto) in TFRecord framing,
//
//   uint64 length | uint32 masked CRC32C of the length | payload | uint32 masked CRC32C of the
//   payload
//
// little-endian, where masked(c) = rotate_right(c, 15) + 0xa282ead8. The file
// starts with an Event holding file_version "brain.Event:2", and its name
// holds ".tfevents.", which is how TensorBoard finds it in a log directory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace xtrain {

// CRC-32C (Castagnoli, reflected polynomial 0x82f63b78), continuing `crc`.
std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc = 0);

// The TFRecord framing of one payload.
std::string tfrecord_frame(const std::string& payload);

// A histogram of `count` values in TensorBoard's HistogramProto terms: equal
// buckets from the smallest value to the largest (one bucket when all are
// equal); non-finite values are left out.
struct Histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limit;  // the right edge of each bucket
  std::vector<double> bucket;        // how many values fall in it
};
Histogram make_histogram(const float* values, std::size_t count, int buckets = 64);

class TensorBoardWriter {
 public:
  // Creates `directory` (and its parents) and a new event file in it,
  // events.out.tfevents.<unix seconds>.<host>.<pid>.xtrain. Throws
  // xtrain::Error naming the path if either cannot be made.
  explicit TensorBoardWriter(const std::string& directory);

  // A session starting at `step`: TensorBoard discards the points earlier
  // sessions wrote from `step` on (a resume from a snapshot).
  void start_session(std::int64_t step);
  // Scalars of one step, in one Event.
  void add_scalars(std::int64_t step, const std::vector<std::pair<std::string, double>>& scalars);
  void add_histogram(std::int64_t step, const std::string& tag, const Histogram& histogram);
  // Makes what was written readable by TensorBoard now.
  void flush();

  const std::string& path() const { return path_; }

 private:
  void write_event(const std::string& serialized_event);

  std::string path_;
  std::ofstream file_;
};

}  // namespace xtrain
