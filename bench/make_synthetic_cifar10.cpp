// A CIFAR-10-shaped stand-in (CIFAR-10 itself is not packaged): LMDBs of
// unencoded 3 x 32 x 32 Datums with labels 0..9, as Caffe's
// convert_cifar_data writes them (keys "%05d"), and their mean file.
//
//   make_synthetic_cifar10 OUT_DIR [TRAIN_COUNT=50000] [TEST_COUNT=10000]
//
// writes OUT_DIR/cifar10_train_lmdb, OUT_DIR/cifar10_test_lmdb and
// OUT_DIR/mean.binaryproto (the train set's per-pixel mean). A class is a
// stripe orientation under random colour and strong noise: the loss falls
// as on real data at first, but the quick net soon reaches ~100% accuracy.
// It is a stand-in for timing training and its data wait, not for accuracy.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "xtrain/lmdb_database.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"

namespace {

constexpr int kSide = 32;
constexpr int kPixels = 3 * kSide * kSide;

// The class is only in the orientation of faint stripes (18 degrees apart);
// colour, stripe frequency and phase are random, and the noise is strong.
std::vector<unsigned char> synthetic_image(int label, std::mt19937& engine) {
  std::normal_distribution<float> noise(0.0f, 50.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  const float angle = 3.14159f * (label + 0.3f * (unit(engine) - 0.5f)) / 10.0f;
  const float frequency = 0.4f + 0.5f * unit(engine);
  const float dx = frequency * std::cos(angle);
  const float dy = frequency * std::sin(angle);
  const float phase = 6.2832f * unit(engine);
  const float colour[3] = {60 + 130 * unit(engine), 60 + 130 * unit(engine),
                           60 + 130 * unit(engine)};
  std::vector<unsigned char> pixels(kPixels);
  for (int c = 0; c < 3; ++c)
    for (int h = 0; h < kSide; ++h)
      for (int w = 0; w < kSide; ++w) {
        const float stripe = 30.0f * std::sin(dx * w + dy * h + phase);
        const float value = colour[c] + stripe + noise(engine);
        pixels[(c * kSide + h) * kSide + w] =
            static_cast<unsigned char>(std::fmin(255.0f, std::fmax(0.0f, value)));
      }
  return pixels;
}

std::vector<double> write_set(const std::string& path, int count, unsigned seed) {
  std::filesystem::remove_all(path);
  std::mt19937 engine(seed);
  xtrain::LmdbWriter writer(xtrain::LmdbDatabase::open_for_writing(path));
  std::vector<double> sums(kPixels, 0.0);
  for (int i = 0; i < count; ++i) {
    const int label = static_cast<int>(engine() % 10);
    const std::vector<unsigned char> pixels = synthetic_image(label, engine);
    xtrain::Datum datum;
    datum.set_channels(3);
    datum.set_height(kSide);
    datum.set_width(kSide);
    datum.set_label(label);
    datum.set_data(pixels.data(), pixels.size());
    char key[16];
    std::snprintf(key, sizeof key, "%05d", i);
    writer.put(key, datum.SerializeAsString());
    for (int j = 0; j < kPixels; ++j) sums[j] += pixels[j];
  }
  writer.commit();
  std::printf("wrote %d records to %s\n", count, path.c_str());
  return sums;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR [TRAIN_COUNT] [TEST_COUNT]\n", argv[0]);
    return 1;
  }
  const std::string out = argv[1];
  const int train_count = argc > 2 ? std::atoi(argv[2]) : 50000;
  const int test_count = argc > 3 ? std::atoi(argv[3]) : 10000;
  std::filesystem::create_directories(out);
  const std::vector<double> sums = write_set(out + "/cifar10_train_lmdb", train_count, 1);
  write_set(out + "/cifar10_test_lmdb", test_count, 2);
  xtrain::BlobProto mean;
  mean.set_num(1);
  mean.set_channels(3);
  mean.set_height(kSide);
  mean.set_width(kSide);
  for (double sum : sums) mean.add_data(static_cast<float>(sum / train_count));
  xtrain::write_proto_to_binary_file(mean, out + "/mean.binaryproto");
  std::printf("wrote %s/mean.binaryproto\n", out.c_str());
  return 0;
}
