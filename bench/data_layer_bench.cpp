// Throughput of the Data layer alone on ENCODED JPEG records, the ImageNet
// setting of Caffe's reference nets: 256 x 256 colour JPEGs, crop 227 with
// mirror at TRAIN, mean file 3 x 256 x 256.
//
//   bench/data_layer_bench.sh [--threads=N] [--batch=256] [--batches=20] ...
//
// The first run builds an LMDB of synthetic "photos" (several octaves of
// smooth random texture plus pixel noise, so they compress like photographs
// do, not like flat test patterns) with cv::imencode, and a mean file. It
// then times forward() of a Data layer over --batches batches after a
// warm-up, and prints images/s and the share of the time forward waited.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <string>
#include <vector>

#include "data/data_layer.hpp"
#include "xtrain/lmdb_database.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/proto_io.hpp"

namespace {

struct Options {
  std::string dir = "/tmp/xtrain_data_bench";
  int records = 1024;
  int size = 256;
  int crop = 227;
  int batch = 256;
  int batches = 20;
  int threads = 0;  // 0: the layer's automatic choice
  int prefetch = 4;
  int quality = 90;
};

int int_flag(const std::string& arg, const std::string& name, int fallback) {
  const std::string prefix = "--" + name + "=";
  return arg.rfind(prefix, 0) == 0 ? std::atoi(arg.c_str() + prefix.size()) : fallback;
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--dir=", 0) == 0) options.dir = arg.substr(6);
    options.records = int_flag(arg, "records", options.records);
    options.size = int_flag(arg, "size", options.size);
    options.crop = int_flag(arg, "crop", options.crop);
    options.batch = int_flag(arg, "batch", options.batch);
    options.batches = int_flag(arg, "batches", options.batches);
    options.threads = int_flag(arg, "threads", options.threads);
    options.prefetch = int_flag(arg, "prefetch", options.prefetch);
    options.quality = int_flag(arg, "quality", options.quality);
  }
  return options;
}

// Texture at several scales (coarse shapes to fine detail) and noise.
cv::Mat synthetic_photo(int size, std::mt19937& engine) {
  cv::Mat sum(size, size, CV_32FC3, cv::Scalar::all(0));
  float amplitude = 60;
  for (int cells = 2; cells <= size / 2; cells *= 2, amplitude *= 0.6f) {
    cv::Mat grid(cells, cells, CV_32FC3);
    cv::randn(grid, cv::Scalar::all(0), cv::Scalar::all(amplitude));
    cv::Mat up;
    cv::resize(grid, up, cv::Size(size, size), 0, 0, cv::INTER_CUBIC);
    sum += up;
  }
  cv::Mat noise(size, size, CV_32FC3);
  cv::randn(noise, cv::Scalar::all(0), cv::Scalar::all(6));
  sum += noise;
  const cv::Scalar base(60 + engine() % 120, 60 + engine() % 120, 60 + engine() % 120);
  sum += base;
  cv::Mat image;
  sum.convertTo(image, CV_8UC3);
  return image;
}

void build_database(const Options& options, const std::string& db, const std::string& mean) {
  std::filesystem::remove_all(db);
  std::mt19937 engine(1234);
  cv::theRNG().state = 1234;
  xtrain::LmdbWriter writer(xtrain::LmdbDatabase::open_for_writing(db));
  std::vector<double> sums(3 * options.size * options.size, 0.0);
  std::size_t bytes = 0;
  for (int i = 0; i < options.records; ++i) {
    const cv::Mat image = synthetic_photo(options.size, engine);
    std::vector<unsigned char> jpeg;
    cv::imencode(".jpg", image, jpeg, {cv::IMWRITE_JPEG_QUALITY, options.quality});
    bytes += jpeg.size();
    xtrain::Datum datum;
    datum.set_encoded(true);
    datum.set_label(i % 1000);
    datum.set_data(jpeg.data(), jpeg.size());
    char key[32];
    std::snprintf(key, sizeof key, "%08d", i);
    writer.put(key, datum.SerializeAsString());
    for (int h = 0; h < options.size; ++h)
      for (int w = 0; w < options.size; ++w)
        for (int c = 0; c < 3; ++c)
          sums[(c * options.size + h) * options.size + w] += image.at<cv::Vec3b>(h, w)[c];
  }
  writer.commit();
  xtrain::BlobProto proto;
  for (int dim : {1, 3, options.size, options.size}) proto.mutable_shape()->add_dim(dim);
  for (double sum : sums) proto.add_data(static_cast<float>(sum / options.records));
  xtrain::write_proto_to_binary_file(proto, mean);
  std::printf("built %s: %d JPEGs of %dx%d, quality %d, %.1f KiB each on average\n", db.c_str(),
              options.records, options.size, options.size, options.quality,
              bytes / 1024.0 / options.records);
}

// User + system CPU seconds of every thread of the process so far.
double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  xtrain::set_min_log_severity(xtrain::LogSeverity::kWarning);
  const std::string tag = std::to_string(options.records) + "_" + std::to_string(options.size) +
                          "_q" + std::to_string(options.quality);
  const std::string db = options.dir + "/jpeg_" + tag + "_lmdb";
  const std::string mean = options.dir + "/mean_" + tag + ".binaryproto";
  if (!std::filesystem::exists(db + "/data.mdb") || !std::filesystem::exists(mean)) {
    std::filesystem::create_directories(options.dir);
    build_database(options, db, mean);
  }

  xtrain::LayerParameter param;
  xtrain::read_proto_from_text_string(
      "name: 'data' type: 'Data' top: 'data' top: 'label' "
      "transform_param { mirror: true crop_size: " +
          std::to_string(options.crop) + " mean_file: '" + mean + "' } data_param { source: '" +
          db + "' backend: LMDB batch_size: " + std::to_string(options.batch) +
          " prefetch: " + std::to_string(options.prefetch) +
          " decode_threads: " + std::to_string(options.threads) + " }",
      &param);
  param.set_phase(xtrain::TRAIN);
  xtrain::DataLayer layer(param);
  xtrain::Blob data;
  xtrain::Blob label;
  layer.setup({}, {&data, &label});
  // Warm-up: the threads start and the first batches fill the queue, as at
  // the start of training.
  for (int i = 0; i < 2; ++i) layer.forward({}, {&data, &label});
  layer.take_data_wait_seconds();

  const double cpu_start = cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < options.batches; ++i) layer.forward({}, {&data, &label});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = cpu_seconds() - cpu_start;
  const double waited = layer.take_data_wait_seconds();
  // CPU time tells what the pipeline costs when the machine is shared (the
  // threads' work on batches loaded ahead counts too, so it is approximate).
  std::printf(
      "decode_threads %d, batch %d, %d batches: %.0f images/s (%.1f ms per batch, "
      "forward waited %.0f%% of the time, %.3f CPU ms per image)\n",
      layer.decode_threads(), options.batch, options.batches,
      options.batch * options.batches / seconds, 1000.0 * seconds / options.batches,
      100.0 * waited / seconds, 1000.0 * cpu / (options.batch * options.batches));
  return 0;
}
