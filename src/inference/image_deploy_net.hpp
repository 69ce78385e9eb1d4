// The net of a deploy prototxt that an application feeds one image batch:
// what Classifier and Detector both open.
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

}  // namespace xtrain
