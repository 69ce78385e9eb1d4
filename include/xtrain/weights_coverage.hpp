// Which learnable layers a set of trained weights leaves untouched.
//
// Weights are copied by layer name, and a layer the file lacks keeps its
// filler's random values -- right when fine-tuning (a renamed last layer),
// wrong when scoring or deploying: a .caffemodel cut short, or one of
// another net, then scores at chance and nothing says why. The tools that
// score or deploy refuse such weights; training warns.
#pragma once

#include <string>
#include <vector>

#include "xtrain/export.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {

// Reads every file of `weights_paths` and copies it into `net` (as
// Net::copy_trained_layers_from does, errors naming the file). Returns the
// names of the net's layers with parameters that none of the files has
// weights for, in the net's order.
XTRAIN_API std::vector<std::string> copy_weights_reporting_missing(
    Net& net, const std::vector<std::string>& weights_paths);

// The learnable layers of `net` without blobs in any of `trained`.
XTRAIN_API std::vector<std::string> layers_without_weights(
    const Net& net, const std::vector<NetParameter>& trained);

// "layer(s) 'ip2', 'conv3' of net 'LeNet' have no weights in 'a.caffemodel'
// and keep their random initial values" (a long list is shortened).
XTRAIN_API std::string describe_missing_weights(const Net& net,
                                                const std::vector<std::string>& layers,
                                                const std::vector<std::string>& weights_paths);

}  // namespace xtrain
