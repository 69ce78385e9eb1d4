// The TensorBoard event file writer's framing and histograms (the files are
// read back by TensorBoard itself in tests/tensorboard).
#include "reporting/tensorboard_writer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "error_message.hpp"
#include "tool_runner.hpp"

namespace xtrain {
namespace {

TEST(TensorBoardWriter, Crc32cOfTheCheckString) {
  // The check value of CRC-32C (RFC 3720, B.4 lists more).
  const std::string check = "123456789";
  EXPECT_EQ(crc32c(check.data(), check.size()), 0xe3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
  const std::string zeros(32, '\0');
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8a9136aau);
  // Continued in two pieces, the same.
  EXPECT_EQ(crc32c(check.data() + 4, 5, crc32c(check.data(), 4)), 0xe3069283u);
}

std::uint64_t little_endian(const std::string& bytes, std::size_t at, int size) {
  std::uint64_t value = 0;
  for (int i = size - 1; i >= 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[at + static_cast<std::size_t>(i)]);
  }
  return value;
}

std::uint32_t masked(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

TEST(TensorBoardWriter, TfRecordFraming) {
  const std::string payload = "an event";
  const std::string record = tfrecord_frame(payload);
  ASSERT_EQ(record.size(), 8 + 4 + payload.size() + 4);
  EXPECT_EQ(little_endian(record, 0, 8), payload.size());
  EXPECT_EQ(little_endian(record, 8, 4), masked(crc32c(record.data(), 8)));
  EXPECT_EQ(record.substr(12, payload.size()), payload);
  EXPECT_EQ(little_endian(record, 12 + payload.size(), 4),
            masked(crc32c(payload.data(), payload.size())));
}

TEST(TensorBoardWriter, HistogramBucketsCoverEveryFiniteValueOnce) {
  const float values[] = {-1.0f, -0.5f, 0.0f, 0.25f, 0.5f, 1.0f, NAN};
  const Histogram histogram = make_histogram(values, 7, 4);
  EXPECT_EQ(histogram.num, 6);
  EXPECT_EQ(histogram.min, -1.0);
  EXPECT_EQ(histogram.max, 1.0);
  EXPECT_DOUBLE_EQ(histogram.sum, 0.25);
  EXPECT_DOUBLE_EQ(histogram.sum_squares, 1 + 0.25 + 0.0625 + 0.25 + 1);
  // Buckets (-inf, -0.5], (-0.5, 0], (0, 0.5], (0.5, 1]: a value on an
  // edge goes left, the minimum into the first.
  EXPECT_EQ(histogram.bucket_limit, (std::vector<double>{-0.5, 0.0, 0.5, 1.0}));
  EXPECT_EQ(histogram.bucket, (std::vector<double>{2, 1, 2, 1}));
  // All equal: one bucket.
  const float same[] = {3, 3, 3};
  const Histogram one = make_histogram(same, 3);
  EXPECT_EQ(one.bucket_limit, std::vector<double>{3});
  EXPECT_EQ(one.bucket, std::vector<double>{3});
}

TEST(TensorBoardWriter, AFileOfFramedRecordsStartingWithTheVersion) {
  testing::TempDir dir("tensorboard");
  std::string path;
  {
    TensorBoardWriter writer((std::filesystem::path(dir.path()) / "run" / "a").string());
    path = writer.path();
    writer.add_scalars(10, {{"train/loss", 0.5}});
    writer.flush();
  }
  EXPECT_NE(std::filesystem::path(path).filename().string().find("events.out.tfevents."),
            std::string::npos)
      << path;
  std::ifstream file(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  // Two records, each framed whole.
  std::size_t at = 0;
  int records = 0;
  while (at < bytes.size()) {
    ASSERT_LE(at + 12, bytes.size());
    const std::size_t length = little_endian(bytes, at, 8);
    ASSERT_LE(at + 12 + length + 4, bytes.size());
    if (records == 0) {
      EXPECT_NE(bytes.substr(at + 12, length).find("brain.Event:2"), std::string::npos);
    }
    at += 12 + length + 4;
    ++records;
  }
  EXPECT_EQ(records, 2);
}

TEST(TensorBoardWriter, ADirectoryThatCannotBeMadeIsAnErrorNamingIt) {
  testing::TempDir dir("tensorboard_file");
  const std::string file = dir.path() + "/plain_file";
  std::ofstream(file) << "x";
  testing::expect_error([&] { TensorBoardWriter writer(file + "/events"); },
                        {"--tensorboard", file + "/events"});
}

}  // namespace
}  // namespace xtrain
