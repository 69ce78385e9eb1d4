// The smallest net a tool test can train: 4 inputs of 3 values, an
// InnerProduct to 2 classes and its loss (Input data: no files needed).
#pragma once

namespace xtrain::testing {

inline constexpr const char* kTinyTrainableNet = R"(name: "tiny"
layer { name: "data" type: "Input" top: "data" top: "label"
        input_param { shape { dim: 4 dim: 3 } shape { dim: 4 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
        inner_product_param { num_output: 2 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

}  // namespace xtrain::testing
