// The net of a deploy prototxt that an application feeds one image batch:
// what Classifier and Detector both open, and its trained weights.
#pragma once

#include <memory>
#include <string>

#include "xtrain/device.hpp"
#include "xtrain/net.hpp"

namespace xtrain {

// The TEST-phase net of `deploy_prototxt` on `device`, checked to have
// exactly one input of shape N x C x H x W; `user` names the caller in the
// errors ("a classifier", "a detector").
std::unique_ptr<Net> open_image_deploy_net(const std::string& deploy_prototxt, const Device& device,
                                           const char* user);

// Copies the layers of `weights` (a .caffemodel) into `net` by name. A
// learnable layer the file does not cover is an error, or with
// `allow_missing_weights` a warning (it keeps its filler's values).
void load_deploy_weights(Net& net, const std::string& weights, bool allow_missing_weights);

}  // namespace xtrain
