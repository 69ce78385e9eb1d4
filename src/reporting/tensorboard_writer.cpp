#include "reporting/tensorboard_writer.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "reporting/tensorboard.pb.h"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

std::array<std::uint32_t, 256> make_crc32c_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t byte = 0; byte < 256; ++byte) {
    std::uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? 0x82f63b78u : 0u);
    table[byte] = crc;
  }
  return table;
}

// TFRecord stores a CRC of data that may itself hold CRCs; the mask keeps
// those from checking out by accident.
std::uint32_t masked_crc32c(const void* data, std::size_t size) {
  const std::uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

void append_little_endian(std::string* out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

double unix_seconds_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

tensorboard::Event event_at(std::int64_t step) {
  tensorboard::Event event;
  event.set_wall_time(unix_seconds_now());
  event.set_step(step);
  return event;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace

std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc) {
  static const std::array<std::uint32_t, 256> table = make_crc32c_table();
  const auto* bytes = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (std::size_t i = 0; i < size; ++i) crc = (crc >> 8) ^ table[(crc ^ bytes[i]) & 0xff];
  return ~crc;
}

std::string tfrecord_frame(const std::string& payload) {
  std::string header;
  append_little_endian(&header, payload.size(), 8);
  std::string record = header;
  append_little_endian(&record, masked_crc32c(header.data(), header.size()), 4);
  record += payload;
  append_little_endian(&record, masked_crc32c(payload.data(), payload.size()), 4);
  return record;
}

Histogram make_histogram(const float* values, std::size_t count, int buckets) {
  Histogram histogram;
  bool any = false;
  for (std::size_t i = 0; i < count; ++i) {
    const double value = values[i];
    if (!std::isfinite(value)) continue;
    histogram.min = any ? std::min(histogram.min, value) : value;
    histogram.max = any ? std::max(histogram.max, value) : value;
    any = true;
    histogram.num += 1;
    histogram.sum += value;
    histogram.sum_squares += value * value;
  }
  if (!any) return histogram;
  const double width = (histogram.max - histogram.min) / buckets;
  if (width <= 0) {
    histogram.bucket_limit = {histogram.max};
    histogram.bucket = {histogram.num};
    return histogram;
  }
  histogram.bucket.assign(static_cast<std::size_t>(buckets), 0.0);
  for (int b = 0; b < buckets; ++b) {
    histogram.bucket_limit.push_back(b + 1 == buckets ? histogram.max
                                                      : histogram.min + width * (b + 1));
  }
  for (std::size_t i = 0; i < count; ++i) {
    const double value = values[i];
    if (!std::isfinite(value)) continue;
    // Bucket b holds (limit[b-1], limit[b]]: a value on an edge goes left.
    const double position = std::ceil((value - histogram.min) / width) - 1;
    const auto b = static_cast<std::size_t>(std::clamp(position, 0.0, buckets - 1.0));
    histogram.bucket[b] += 1;
  }
  return histogram;
}

TensorBoardWriter::TensorBoardWriter(const std::string& directory) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  XTRAIN_CHECK(!error, "--tensorboard: cannot create the directory '", directory,
               "': ", error.message());
  const auto seconds = static_cast<long long>(unix_seconds_now());
  path_ = (std::filesystem::path(directory) / detail::concat("events.out.tfevents.", seconds, ".",
                                                             host_name(), ".", getpid(), ".xtrain"))
              .string();
  file_.open(path_, std::ios::binary | std::ios::app);
  XTRAIN_CHECK(file_.is_open(), "--tensorboard: cannot write '", path_,
               "': ", std::strerror(errno));
  tensorboard::Event version = event_at(0);
  version.set_file_version("brain.Event:2");
  write_event(version.SerializeAsString());
  flush();
}

void TensorBoardWriter::start_session(std::int64_t step) {
  tensorboard::Event event = event_at(step);
  event.mutable_session_log()->set_status(tensorboard::SessionLog::START);
  write_event(event.SerializeAsString());
}

void TensorBoardWriter::add_scalars(std::int64_t step,
                                    const std::vector<std::pair<std::string, double>>& scalars) {
  if (scalars.empty()) return;
  tensorboard::Event event = event_at(step);
  for (const auto& [tag, value] : scalars) {
    auto* summary_value = event.mutable_summary()->add_value();
    summary_value->set_tag(tag);
    summary_value->set_simple_value(static_cast<float>(value));
  }
  write_event(event.SerializeAsString());
}

void TensorBoardWriter::add_histogram(std::int64_t step, const std::string& tag,
                                      const Histogram& histogram) {
  tensorboard::Event event = event_at(step);
  auto* value = event.mutable_summary()->add_value();
  value->set_tag(tag);
  auto* histo = value->mutable_histo();
  histo->set_min(histogram.min);
  histo->set_max(histogram.max);
  histo->set_num(histogram.num);
  histo->set_sum(histogram.sum);
  histo->set_sum_squares(histogram.sum_squares);
  for (double limit : histogram.bucket_limit) histo->add_bucket_limit(limit);
  for (double count : histogram.bucket) histo->add_bucket(count);
  write_event(event.SerializeAsString());
}

void TensorBoardWriter::flush() {
  file_.flush();
  XTRAIN_CHECK(file_.good(), "cannot write the TensorBoard event file '", path_, "' (disk full?)");
}

void TensorBoardWriter::write_event(const std::string& serialized_event) {
  file_ << tfrecord_frame(serialized_event);
  XTRAIN_CHECK(file_.good(), "cannot write the TensorBoard event file '", path_, "' (disk full?)");
}

}  // namespace xtrain
