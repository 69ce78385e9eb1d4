// A setting of nan (a float field of a layer or solver) is never meant:
// `beta: nan` or `std: nan` parse, and then turn every value they touch into
// nan without a word. (Infinities can be meant, as clip_param's `min: -inf`.)
#pragma once

#include <google/protobuf/message.h>

#include <string>

#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {

// The path of the first float or double field holding nan in `message`
// ("swish_param.beta", "stepvalue_weights[2]"); "" if none. Stored weights
// (BlobProto values) are not settings and are not searched.
std::string first_nan_setting(const google::protobuf::Message& message);

// Throws xtrain::Error naming the layer and the field of the first layer
// setting that is nan.
void check_no_nan_layer_settings(const NetParameter& net);

}  // namespace xtrain
