// A solver prototxt as `xtrain train` takes it: text parsing, the upgrade of
// the legacy solver_type, then the Solver built on the CPU, which checks the
// solver's fields (iter_size, display, the learning-rate policy and the
// fields it needs, snapshot settings, test_iter against the test nets) and
// builds its train and test nets; then the learning rate at a few iterations,
// the arithmetic a policy does with the fuzzed gamma, power and stepsize.
//
// Files the solver names are replaced, so the solver is what is fuzzed here
// (nets have net_prototxt_fuzzer): every net file becomes a small fixed net
// in the scratch directory, and a snapshot_prefix is kept only as a file name
// in the scratch directory (the Solver writes a probe file there).
#include <fstream>
#include <string>

#include "fuzz_support.hpp"
#include "xtrain/lr_policy.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/solver.hpp"

namespace {

const char* const kSmallNet = R"(
name: "small"
layer { name: "data" type: "DummyData" top: "data" top: "label"
  dummy_data_param { shape { dim: 2 dim: 3 } shape { dim: 2 }
                     data_filler { type: "gaussian" } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 2 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

std::string small_net_path() {
  static const std::string path = [] {
    const std::string file = xtrain_fuzz::scratch_directory() + "/small_net.prototxt";
    std::ofstream(file) << kSmallNet;
    return file;
  }();
  return path;
}

void keep_inside_the_scratch_directory(xtrain::SolverParameter* param) {
  if (param->has_net()) param->set_net(small_net_path());
  if (param->has_train_net()) param->set_train_net(small_net_path());
  for (std::string& test_net : *param->mutable_test_net()) test_net = small_net_path();
  std::string prefix = param->snapshot_prefix();
  for (char& c : prefix) {
    if (c == '/') c = '_';
  }
  if (prefix == "." || prefix == "..") prefix = "snapshot";
  param->set_snapshot_prefix(prefix);
}

}  // namespace

XTRAIN_FUZZ_INITIALIZE

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  xtrain_fuzz::expect_only_xtrain_errors([&] {
    xtrain::SolverParameter param = xtrain::read_solver_params_from_text(text, "fuzz.prototxt");
    keep_inside_the_scratch_directory(&param);
    xtrain::SolverOptions options;
    options.device = xtrain::Device::cpu();
    options.verbose_nets = false;
    std::unique_ptr<xtrain::Solver> solver = xtrain::create_solver(param, options);
    int step = 0;
    for (int iter : {0, 1, param.stepsize(), param.max_iter() / 2, param.max_iter()}) {
      (void)xtrain::learning_rate(param, iter, &step);
    }
  });
  return 0;
}
