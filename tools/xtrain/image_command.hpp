// What `xtrain classify` and `xtrain detect` share: the flags they both
// require, and the image input options they both read from the flags.
#pragma once

#include <string>
#include <vector>

#include "command.hpp"
#include "flags.hpp"
#include "xtrain/error.hpp"
#include "xtrain/image_input_options.hpp"

namespace xtrain::cli {

// --model, --weights and at least one image file are given; the errors name
// `command` ("classify", "detect") and show how to run it.
inline void require_image_command_inputs(const char* command,
                                         const std::vector<std::string>& images) {
  XTRAIN_CHECK(!FLAGS_model.empty(), "xtrain ", command, " needs --model=DEPLOY.prototxt");
  XTRAIN_CHECK(!FLAGS_weights.empty(), "xtrain ", command, " needs --weights=MODEL.caffemodel");
  XTRAIN_CHECK(!images.empty(), "xtrain ", command, " needs image files after the flags: xtrain ",
               command, " --model=... --weights=... IMAGE...");
}

// The options of a ClassifierOptions or DetectorOptions that both take from
// the flags: the mean and scale of the net's input (--mean, --mean_values,
// --scale), the device (--gpu) and --allow_missing_weights.
inline void read_image_input_flags(ImageInputOptions* options) {
  options->mean_file = FLAGS_mean;
  options->mean_values = parse_mean_values(FLAGS_mean_values);
  options->scale = static_cast<float>(FLAGS_scale);
  options->device = choose_device(FLAGS_gpu, false, 0);
  options->allow_missing_weights = FLAGS_allow_missing_weights;
}

}  // namespace xtrain::cli
