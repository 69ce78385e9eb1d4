// Exact resume: N + M iterations straight give the same weight bytes as N
// iterations, a snapshot, a new solver restored from it, and M more, for
// every data source (with shuffling, rand_skip, crop and mirror; an LMDB
// cached and shuffled each epoch, with NVIDIA Caffe's random resize), Dropout
// and iter_size > 1, with and without a fixed random_seed.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <memory>
#include <string>

#include "image_fixtures.hpp"
#include "lmdb_fixture.hpp"
#include "tool_runner.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/solver.hpp"

namespace xtrain::testing {
namespace {

constexpr int kImages = 7;  // batches of 3 cross epoch ends at different records

enum class Source { kImageData, kLmdb, kCachedLmdb, kHdf5 };

struct ResumeCase {
  const char* name;
  Source source;
  bool fixed_seed;
  bool hdf5_snapshots = false;
};

std::string image_data_layer(const TempDir& dir, bool train) {
  std::vector<cv::Size> sizes(kImages, cv::Size(10, 12));
  const auto listed = write_colour_jpegs(dir.path(), sizes);
  const std::string list = dir.write("list.txt", list_text(listed));
  return std::string("layer { name: 'data' type: 'ImageData' top: 'data' top: 'label' ") +
         "include { phase: " + (train ? "TRAIN" : "TEST") + " } " +
         "transform_param { crop_size: 8 mirror: " + (train ? "true" : "false") +
         " scale: 0.004 } image_data_param { source: '" + list + "' root_folder: '" + dir.path() +
         "/' batch_size: 3 shuffle: " + (train ? "true" : "false") + " } }\n";
}

std::string lmdb_layer(const TempDir& dir, bool train, bool cached = false) {
  const std::string db = dir.file("lmdb");
  if (!std::filesystem::exists(db)) {
    std::vector<FixtureImage> images;
    for (int i = 0; i < kImages; ++i) {
      FixtureImage image;
      image.label = i % 5;
      for (int p = 0; p < 3 * 10 * 10; ++p) {
        image.pixels.push_back(static_cast<unsigned char>((p * 7 + i * 31) % 256));
      }
      images.push_back(image);
    }
    write_datum_lmdb(db, 3, 10, 10, images);
  }
  // Cached: data_param's cache and shuffle (TRAIN only) and the random
  // resize, in both phases as NVIDIA Caffe has it.
  const std::string resize =
      cached ? " img_rand_resize_lower: 8 img_rand_resize_upper: 13 allow_upscale: true "
               "horizontal_stretch_lower: 0.8 horizontal_stretch_upper: 1.2"
             : "";
  return std::string("layer { name: 'data' type: 'Data' top: 'data' top: 'label' ") +
         "include { phase: " + (train ? "TRAIN" : "TEST") + " } " +
         "transform_param { crop_size: 8 mirror: " + (train ? "true" : "false") + resize +
         " scale: 0.004 } data_param { source: '" + db + "' backend: LMDB batch_size: 3 " +
         (train ? "rand_skip: 5" : "") + (cached ? " cache: true shuffle: true" : "") + " } }\n";
}

void write_hdf5_file(const std::string& path, int rows, int seed) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  std::vector<float> data(static_cast<std::size_t>(rows) * 3 * 8 * 8);
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<float>((i * 13 + seed) % 17) / 17;
  std::vector<float> labels(rows);
  for (int i = 0; i < rows; ++i) labels[i] = static_cast<float>((i + seed) % 5);
  const hsize_t data_dims[4] = {static_cast<hsize_t>(rows), 3, 8, 8};
  const hsize_t label_dims[1] = {static_cast<hsize_t>(rows)};
  for (const auto& [name, dims, rank, values] :
       {std::tuple<const char*, const hsize_t*, int, const float*>{"data", data_dims, 4,
                                                                   data.data()},
        {"label", label_dims, 1, labels.data()}}) {
    const hid_t space = H5Screate_simple(rank, dims, nullptr);
    const hid_t dataset =
        H5Dcreate2(file, name, H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(H5Dwrite(dataset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values), 0);
    H5Dclose(dataset);
    H5Sclose(space);
  }
  H5Fclose(file);
}

std::string hdf5_layer(const TempDir& dir, bool train) {
  const std::string list = dir.file("h5list.txt");
  if (!std::filesystem::exists(list)) {
    write_hdf5_file(dir.file("a.h5"), 4, 1);
    write_hdf5_file(dir.file("b.h5"), 3, 2);
    dir.write("h5list.txt", dir.file("a.h5") + "\n" + dir.file("b.h5") + "\n");
  }
  return std::string("layer { name: 'data' type: 'HDF5Data' top: 'data' top: 'label' ") +
         "include { phase: " + (train ? "TRAIN" : "TEST") + " } hdf5_data_param { source: '" +
         list + "' batch_size: 3 shuffle: " + (train ? "true" : "false") + " } }\n";
}

std::string net_text(const TempDir& dir, Source source) {
  auto data = [&](bool train) {
    switch (source) {
      case Source::kImageData:
        return image_data_layer(dir, train);
      case Source::kLmdb:
        return lmdb_layer(dir, train);
      case Source::kCachedLmdb:
        return lmdb_layer(dir, train, true);
      case Source::kHdf5:
        return hdf5_layer(dir, train);
    }
    return std::string();
  };
  return "name: 'resume' " + data(true) + data(false) + R"(
    layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv'
            param { lr_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
            convolution_param { num_output: 4 kernel_size: 3
              weight_filler { type: 'gaussian' std: 0.1 } bias_filler { type: 'constant' value: 0.1 } } }
    layer { name: 'relu' type: 'ReLU' bottom: 'conv' top: 'conv' }
    layer { name: 'drop' type: 'Dropout' bottom: 'conv' top: 'conv' dropout_param { dropout_ratio: 0.5 } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'conv' top: 'ip'
            inner_product_param { num_output: 5 weight_filler { type: 'xavier' } } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' }
    layer { name: 'accuracy' type: 'Accuracy' bottom: 'ip' bottom: 'label' top: 'accuracy'
            include { phase: TEST } }
  )";
}

class ExactResume : public ::testing::TestWithParam<ResumeCase> {
 protected:
  SolverParameter solver(int max_iter, const std::string& prefix) const {
    SolverParameter param;
    // A small learning rate: at 0.05 about one seed in 60 killed every ReLU,
    // after which the data order no longer reaches the weights and the plain
    // continuation below came out identical by chance.
    read_proto_from_text_string(R"(
      base_lr: 0.01 momentum: 0.9 weight_decay: 0.001 lr_policy: 'step' gamma: 0.5 stepsize: 4
      iter_size: 2 test_iter: 2 test_interval: 3 display: 0 snapshot_after_train: true
      solver_mode: CPU)",
                                &param);
    read_proto_from_text_string(net_text(dir_, GetParam().source), param.mutable_net_param());
    param.set_max_iter(max_iter);
    param.set_snapshot_prefix(dir_.file(prefix));
    if (GetParam().fixed_seed) param.set_random_seed(20261122);
    if (GetParam().hdf5_snapshots) param.set_snapshot_format(SolverParameter::HDF5);
    return param;
  }
  static SolverOptions quiet() {
    SolverOptions options;
    options.verbose_nets = false;
    return options;
  }
  static std::string weight_bytes(const Solver& solver) {
    NetParameter weights;
    solver.net().to_proto(&weights);
    return weights.SerializeAsString();
  }
  TempDir dir_{"exact_resume"};
};

TEST_P(ExactResume, StraightAndResumedRunsGiveIdenticalWeights) {
  constexpr int kFirst = 5;
  constexpr int kTotal = 12;
  // The straight run snapshots on its way past iteration kFirst.
  SolverParameter straight_param = solver(kTotal, "straight");
  straight_param.set_snapshot(kFirst);
  auto straight = create_solver(straight_param, quiet());
  straight->solve();
  ASSERT_EQ(straight->iter(), kTotal);

  // A different solver object, as after a restart: with random_seed unset it
  // is built with a seed of its own, which the restore must override.
  auto second_part = create_solver(solver(kTotal, "parts"), quiet());
  const std::string state_file = dir_.file(
      GetParam().hdf5_snapshots ? "straight_iter_5.solverstate.h5" : "straight_iter_5.solverstate");
  second_part->solve(state_file);
  ASSERT_EQ(second_part->iter(), kTotal);

  EXPECT_EQ(weight_bytes(*straight), weight_bytes(*second_part))
      << "the resumed run's weights differ from the straight run's";
  // The test nets' readers resumed too: the last test saw the same batches.
  ASSERT_EQ(straight->last_test_results().size(), 1u);
  EXPECT_EQ(straight->last_test_results(), second_part->last_test_results());

  // And the straight run really depends on what is restored: without the
  // resume state (a Caffe-style state) the continuation differs.
  if (GetParam().hdf5_snapshots) return;
  SolverState state;
  read_proto_from_binary_file(state_file, &state);
  state.clear_resume();
  state.clear_file_crc32();
  write_proto_to_binary_file(state, dir_.file("caffe_style.solverstate"));
  auto without_resume_state = create_solver(solver(kTotal, "caffe_style"), quiet());
  without_resume_state->solve(dir_.file("caffe_style.solverstate"));
  EXPECT_NE(weight_bytes(*straight), weight_bytes(*without_resume_state))
      << "the test cannot tell an exact resume from a plain one";
}

INSTANTIATE_TEST_SUITE_P(
    DataSources, ExactResume,
    ::testing::Values(ResumeCase{"ShuffledImageDataWithCropAndMirror", Source::kImageData, false},
                      ResumeCase{"LmdbWithRandSkipCropAndMirror", Source::kLmdb, false},
                      ResumeCase{"CachedShuffledLmdbWithRandomResize", Source::kCachedLmdb, false},
                      ResumeCase{"CachedShuffledLmdbWithFixedSeed", Source::kCachedLmdb, true},
                      ResumeCase{"ShuffledHdf5", Source::kHdf5, false},
                      ResumeCase{"ImageDataWithFixedSeed", Source::kImageData, true},
                      ResumeCase{"LmdbWithHdf5Snapshots", Source::kLmdb, false, true}),
    [](const ::testing::TestParamInfo<ResumeCase>& param_info) {
      return std::string(param_info.param.name);
    });

}  // namespace
}  // namespace xtrain::testing
