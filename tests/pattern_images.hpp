// Images for the image-pipeline tests, made and encoded with OpenCV itself
// (not with the code under test): known pixel patterns, their encodings,
// and their planar float values (what a Data/ImageData layer must output).
#pragma once

#include <cstdio>
#include <functional>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "xtrain/lmdb_database.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain::testing {

// An OpenCV image (interleaved; B, G, R for 3 channels) whose value at
// (h, w, c) is (h * 37 + w * 11 + c * 83 + seed) mod 256.
inline cv::Mat pattern_mat(int channels, int height, int width, int seed = 0) {
  cv::Mat mat(height, width, CV_8UC(channels));
  for (int h = 0; h < height; ++h)
    for (int w = 0; w < width; ++w)
      for (int c = 0; c < channels; ++c)
        mat.ptr<unsigned char>(h)[w * channels + c] =
            static_cast<unsigned char>((h * 37 + w * 11 + c * 83 + seed) & 0xff);
  return mat;
}

// ".png", ".jpg", ...
inline std::string encode_mat(const cv::Mat& mat, const std::string& extension) {
  std::vector<unsigned char> bytes;
  if (!cv::imencode(extension, mat, bytes)) return {};
  return std::string(bytes.begin(), bytes.end());
}

inline cv::Mat decode_bytes(const std::string& bytes, int imread_flags) {
  const std::vector<unsigned char> raw(bytes.begin(), bytes.end());
  return cv::imdecode(raw, imread_flags);
}

// The image's values in C x H x W order.
inline std::vector<float> planar_floats(const cv::Mat& mat) {
  const int channels = mat.channels();
  std::vector<float> values(static_cast<std::size_t>(channels) * mat.rows * mat.cols);
  for (int c = 0; c < channels; ++c)
    for (int h = 0; h < mat.rows; ++h)
      for (int w = 0; w < mat.cols; ++w)
        values[(static_cast<std::size_t>(c) * mat.rows + h) * mat.cols + w] =
            mat.ptr<unsigned char>(h)[w * channels + c];
  return values;
}

inline Datum encoded_datum(const std::string& bytes, int label) {
  Datum datum;
  datum.set_data(bytes);
  datum.set_encoded(true);
  datum.set_label(label);
  return datum;
}

// Records "00000000", "00000001", ...: encoded_datum(bytes_of(i), label_of(i)).
inline void write_encoded_lmdb(const std::string& path, int count,
                               const std::function<std::string(int)>& bytes_of,
                               const std::function<int(int)>& label_of) {
  LmdbWriter writer(LmdbDatabase::open_for_writing(path));
  for (int i = 0; i < count; ++i) {
    char key[16];
    std::snprintf(key, sizeof key, "%08d", i);
    writer.put(key, encoded_datum(bytes_of(i), label_of(i)).SerializeAsString());
  }
  writer.commit();
}

}  // namespace xtrain::testing
