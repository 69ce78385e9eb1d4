// Every layer that computes channel-blocked, one at a time, at both block
// widths (nChw8c and nChw16c, whatever this CPU's oneDNN computes in): fed
// blocked bottoms and asked for blocked tops, it must give the bits the same
// layer gives on plain blobs, forward and backward. The net-level tests
// (channel_blocked_*_test.cpp) need oneDNN's convolutions to write blocked
// tops, which they do only at the width oneDNN computes in; these do not.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "blocked_layout_test_support.hpp"
#include "core/engine_hooks.hpp"
#include "layer_test_support.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/layer.hpp"

namespace xtrain {
namespace {

struct LayerCase {
  const char* name;
  const char* prototxt;
  int bottoms;       // each 2 x 48 x 7 x 5 (48: whole blocks at both widths)
  bool in_place;     // the top is the first bottom
  bool blocked_top;  // ask for the top blocked (out of place)
};

// What a run leaves: the tops' values, the bottoms' gradients and the
// parameters' gradients, all read through the plain accessors.
struct Results {
  std::vector<std::vector<float>> values;
};

const std::vector<int> kShape = {2, 48, 7, 5};

// Forward then backward of one fresh layer on fresh blobs (the same values
// for the same case), blocked or plain.
Results run(const LayerCase& c, bool blocked, bool* ran_blocked) {
  std::unique_ptr<Layer> layer = testing::make_layer(c.prototxt);
  std::vector<std::unique_ptr<Blob>> storage;
  BlobVec bottom;
  for (int b = 0; b < c.bottoms; ++b) {
    storage.push_back(std::make_unique<Blob>(kShape));
    testing::fill_uniform(*storage.back(), 10 + b, -2.0f, 2.0f);
    bottom.push_back(storage.back().get());
  }
  BlobVec top;
  if (c.in_place) {
    top.push_back(bottom[0]);
  } else {
    storage.push_back(std::make_unique<Blob>());
    top.push_back(storage.back().get());
  }
  layer->setup(bottom, top);
  for (auto& param : layer->blobs()) {
    testing::fill_uniform(*param, 99, 0.5f, 1.5f);
    std::fill(param->mutable_cpu_diff(), param->mutable_cpu_diff() + param->count(), 0.0f);
  }
  if (blocked) {
    mutable_engine_hooks(*layer)->set_channel_blocked_tops({c.blocked_top});
    for (Blob* b : bottom) b->cpu_data_in(MemoryLayout::kChannelBlocked);
  }
  layer->forward(bottom, top);
  *ran_blocked = top[0]->data_layout() == MemoryLayout::kChannelBlocked;

  Results results;
  // The top's gradient arrives in the layout of its values.
  const MemoryLayout top_layout = top[0]->data_layout();
  results.values.push_back(testing::data_of(*top[0]));
  top[0]->cpu_data_in(top_layout);  // back as the layer left it
  {
    RandomStream random(77);
    std::vector<float> diff(top[0]->count());
    random.uniform(diff.size(), -1.0f, 1.0f, diff.data());
    std::copy(diff.begin(), diff.end(), top[0]->mutable_cpu_diff());
    top[0]->cpu_diff_in(top_layout);
  }
  layer->backward(top, std::vector<bool>(bottom.size(), true), bottom);
  for (Blob* b : bottom) results.values.push_back(testing::diff_of(*b));
  for (auto& param : layer->blobs()) results.values.push_back(testing::diff_of(*param));
  return results;
}

const LayerCase kCases[] = {
    {"MAX pooling",
     "name: 'p' type: 'Pooling' pooling_param { pool: MAX kernel_size: 3 stride: 2 }", 1, false,
     true},
    {"AVE pooling",
     "name: 'p' type: 'Pooling' pooling_param { pool: AVE kernel_size: 3 stride: 1 pad: 1 }", 1,
     false, true},
    {"BatchNorm in place", "name: 'bn' type: 'BatchNorm'", 1, true, false},
    {"BatchNorm", "name: 'bn' type: 'BatchNorm'", 1, false, true},
    {"Scale with a bias in place", "name: 's' type: 'Scale' scale_param { bias_term: true }", 1,
     true, false},
    {"Scale", "name: 's' type: 'Scale'", 1, false, true},
    {"Bias in place", "name: 'b' type: 'Bias'", 1, true, false},
    {"Eltwise SUM", "name: 'e' type: 'Eltwise' eltwise_param { operation: SUM }", 2, false, true},
    {"Concat", "name: 'c' type: 'Concat'", 2, false, true},
};

class ChannelBlockedWidths : public ::testing::TestWithParam<int> {};

INSTANTIATE_TEST_SUITE_P(BothWidths, ChannelBlockedWidths,
                         ::testing::ValuesIn(testing::kChannelBlockWidths),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           return "by" + std::to_string(param_info.param);
                         });

TEST_P(ChannelBlockedWidths, EveryBlockedLayerIsBitIdenticalToPlain) {
  testing::ScopedChannelBlock width(GetParam());
  for (const LayerCase& c : kCases) {
    SCOPED_TRACE(c.name);
    bool plain_ran_blocked = false;
    bool ran_blocked = false;
    const Results plain = run(c, false, &plain_ran_blocked);
    const Results blocked = run(c, true, &ran_blocked);
    EXPECT_FALSE(plain_ran_blocked);
    EXPECT_TRUE(ran_blocked) << "the layer did not compute in the blocked layout";
    ASSERT_EQ(plain.values.size(), blocked.values.size());
    for (std::size_t i = 0; i < plain.values.size(); ++i) {
      ASSERT_EQ(plain.values[i].size(), blocked.values[i].size());
      EXPECT_TRUE(testing::same_bits(plain.values[i].data(), blocked.values[i].data(),
                                     plain.values[i].size()))
          << "result " << i << " (0: top, then bottom and parameter gradients)";
    }
  }
}

}  // namespace
}  // namespace xtrain
