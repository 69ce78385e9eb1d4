// xtrain test: run a trained net on its TEST phase and report each output
// averaged over --iterations batches (Caffe's line shapes).
#include "command.hpp"
#include "flags.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/net.hpp"

namespace xtrain::cli {

int test_command() {
  XTRAIN_CHECK(!FLAGS_model.empty(), "xtrain test needs --model=NET.prototxt");
  XTRAIN_CHECK(!FLAGS_weights.empty(),
               "xtrain test needs --weights=MODEL.caffemodel (an untrained net scores nothing)");
  XTRAIN_CHECK(FLAGS_iterations > 0, "--iterations must be positive, got ", FLAGS_iterations);
  configure_compute();
  NetOptions options;
  options.device = choose_device(FLAGS_gpu, false, 0);
  options.share_activation_memory = FLAGS_share_activation_memory;
  options.channel_blocked_activations = FLAGS_channel_blocked_activations;
  options.share_kept_copies = FLAGS_share_kept_copies;
  options.fuse_layers = FLAGS_fuse_layers;
  options.precision = precision_flag();
  XLOG(INFO) << "Use " << options.device.to_string() << ".";
  Net net(FLAGS_model, parse_phase(FLAGS_phase, TEST), FLAGS_level, split_commas(FLAGS_stage),
          options);
  copy_weights(net, FLAGS_weights, /*scoring=*/true);
  XLOG(INFO) << "Running for " << FLAGS_iterations << " iterations.";

  std::vector<double> scores;
  std::vector<int> score_output;
  double total_loss = 0;
  for (int i = 0; i < FLAGS_iterations; ++i) {
    total_loss += net.forward();
    std::size_t index = 0;
    for (std::size_t j = 0; j < net.output_blobs().size(); ++j) {
      const Blob& output = *net.output_blobs()[j];
      const std::string& name = net.blob_names()[net.output_blob_indices()[j]];
      for (std::size_t k = 0; k < output.count(); ++k, ++index) {
        const float score = output.cpu_data()[k];
        if (i == 0) {
          scores.push_back(score);
          score_output.push_back(static_cast<int>(j));
        } else {
          scores[index] += score;
        }
        XLOG(INFO) << "Batch " << i << ", " << name << " = " << score;
      }
    }
  }
  XLOG(INFO) << "Loss: " << total_loss / FLAGS_iterations;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const int blob_id = net.output_blob_indices()[score_output[i]];
    const float weight = net.blob_loss_weights()[blob_id];
    const double mean = scores[i] / FLAGS_iterations;
    std::string suffix;
    if (weight != 0) {
      suffix = " (* " + std::to_string(weight) + " = " + std::to_string(weight * mean) + " loss)";
    }
    XLOG(INFO) << net.blob_names()[blob_id] << " = " << mean << suffix;
  }
  return 0;
}

}  // namespace xtrain::cli
