// What the RNN and LSTM layer tests share: the layer text, Caffe's blob
// order, and gradient checks over sequences that reset inside or that carry
// a static input (the shapes are those of Caffe's recurrent layers: x is
// T x N x D, cont T x N, x_static N x D_static).
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain::testing {

// A layer of `type` ("RNN" or "LSTM"), named in lower case ('rnn', 'lstm'),
// with `hidden` units and uniform fillers; `extra` goes into recurrent_param.
inline std::string recurrent_layer(const std::string& type, int hidden,
                                   const std::string& extra = "") {
  std::string name = type;
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "name: '" + name + "' type: '" + type +
         "' recurrent_param { num_output: " + std::to_string(hidden) +
         " weight_filler { type: 'uniform' min: -0.6 max: 0.6 } "
         "bias_filler { type: 'uniform' min: -0.3 max: 0.3 } " +
         extra + " }";
}

// Sets the layer up on T = 3, N = 2, D = 5 with a static input of D_static
// = 4 and expects its learnable blobs to have `shapes`, in this order, and
// its top T x N x `hidden`.
inline void expect_blob_shapes(const std::string& layer_text, int hidden,
                               const std::vector<std::vector<int>>& shapes) {
  Blob x({3, 2, 5});
  Blob cont({3, 2});
  Blob x_static({2, 4});
  Blob top;
  auto layer = make_layer(layer_text);
  layer->setup({&x, &cont, &x_static}, {&top});
  ASSERT_EQ(layer->blobs().size(), shapes.size());
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    EXPECT_EQ(layer->blobs()[i]->shape(), shapes[i]) << "blob " << i;
  }
  EXPECT_EQ(top.shape(), (std::vector<int>{3, 2, hidden}));
}

// The gradient for x against finite differences, T = 3, N = 2, D = 2: both
// streams start at t = 1, stream 1 starts again at t = 2.
inline void check_gradient_with_a_reset(const std::string& layer_text) {
  Blob x({3, 2, 2});
  Blob cont({3, 2});
  Blob top;
  fill_uniform(x, 11);
  set_data(cont, {0, 0, 1, 0, 1, 1});
  auto layer = make_layer(layer_text);
  layer->setup({&x, &cont}, {&top});
  GradientCheckOptions options;
  options.bottoms_to_check = {0};
  GradientChecker(options).check(*layer, {&x, &cont}, {&top});
}

// The gradients for x and x_static, T = 2, N = 2, D = 2, D_static = 3, both
// streams starting at t = 1.
inline void check_gradient_with_a_static_input(const std::string& layer_text) {
  Blob x({2, 2, 2});
  Blob cont({2, 2});
  Blob x_static({2, 3});
  Blob top;
  fill_uniform(x, 11);
  fill_uniform(x_static, 13);
  set_data(cont, {0, 0, 1, 1});
  auto layer = make_layer(layer_text);
  layer->setup({&x, &cont, &x_static}, {&top});
  GradientCheckOptions options;
  options.bottoms_to_check = {0, 2};
  GradientChecker(options).check(*layer, {&x, &cont, &x_static}, {&top});
}

}  // namespace xtrain::testing
