// Files cut short are told apart from files of another kind.
#include "core/truncated_message.hpp"

#include <gtest/gtest.h>

#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {
namespace {

std::string solver_state_bytes() {
  SolverState state;
  state.set_iter(500);
  state.set_learned_net("lenet_iter_500.caffemodel");
  for (int i = 0; i < 3; ++i) {
    BlobProto* history = state.add_history();
    history->mutable_shape()->add_dim(100);
    for (int j = 0; j < 100; ++j) history->add_data(0.5f * static_cast<float>(j));
  }
  return state.SerializeAsString();
}

TEST(LooksCutShort, AStateCutAnywhereInsideItsFields) {
  const std::string whole = solver_state_bytes();
  EXPECT_FALSE(looks_cut_short(whole, *SolverState::descriptor())) << "whole";
  for (double fraction : {0.3, 0.5, 0.9, 0.99}) {
    const std::string cut = whole.substr(0, static_cast<std::size_t>(fraction * whole.size()));
    SolverState parsed;
    ASSERT_FALSE(parsed.ParseFromString(cut)) << fraction;
    EXPECT_TRUE(looks_cut_short(cut, *SolverState::descriptor())) << fraction;
  }
}

TEST(LooksCutShort, OtherBytesAreNot) {
  EXPECT_FALSE(looks_cut_short("", *SolverState::descriptor()));
  EXPECT_FALSE(looks_cut_short("net: \"x.prototxt\"\nbase_lr: 0.1\n", *SolverState::descriptor()));
  std::string noise(4096, '\0');
  for (std::size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<char>(i * 7919 % 251);
  EXPECT_FALSE(looks_cut_short(noise, *SolverState::descriptor()));
  // Any message type: a .caffemodel cut inside its last layer.
  NetParameter net;
  net.set_name("lenet");
  LayerParameter* layer = net.add_layer();
  layer->set_name("conv1");
  layer->add_blobs()->add_data(1.0f);
  const std::string net_bytes = net.SerializeAsString();
  const std::string cut_net = net_bytes.substr(0, net_bytes.size() - 2);
  EXPECT_TRUE(looks_cut_short(cut_net, *NetParameter::descriptor()));
}

}  // namespace
}  // namespace xtrain
