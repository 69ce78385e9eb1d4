// A .solverstate as `xtrain train --snapshot=` resumes from it: the solver
// state read (binary, Caffe's or ours, or HDF5 by its signature), its history
// checked against the solver's net, the weights it names found and checked
// against the size and CRC-32 it recorded, the resume state (random streams,
// data positions) applied, and the weights and history copied in.
//
// The solver is SGD with momentum on the small linear net of the Caffe
// snapshot fixture, made afresh for each input (restoring changes it). The
// weights files the seed states name (fuzz/seeds/caffemodel/) are copied
// into the scratch directory once, so a state that survives the fuzzing
// reaches the weight and history checks.
#include <filesystem>
#include <memory>
#include <string>

#include "fuzz_support.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/solver.hpp"

namespace {

xtrain::SolverParameter solver_parameters() {
  xtrain::SolverParameter param;
  *param.mutable_net_param() = xtrain::read_net_params_from_text_file(
      xtrain_fuzz::source_path("tests/fixtures/caffe_snapshot/net.prototxt"));
  param.set_base_lr(0.01f);
  param.set_lr_policy("step");
  param.set_gamma(0.5f);
  param.set_stepsize(2);
  param.set_momentum(0.9f);
  param.set_max_iter(3);
  param.set_snapshot_prefix("lin");
  return param;
}

void place_seed_weights() {
  namespace fs = std::filesystem;
  for (const char* name : {"lin_iter_3.caffemodel", "caffe_iter_4.caffemodel"}) {
    fs::copy_file(xtrain_fuzz::source_path(std::string("fuzz/seeds/caffemodel/") + name),
                  fs::path(xtrain_fuzz::scratch_directory()) / name,
                  fs::copy_options::overwrite_existing);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  xtrain_fuzz::prepare_process();
  place_seed_weights();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const xtrain::SolverParameter param = solver_parameters();
  const xtrain_fuzz::ScratchFile file(data, size, ".solverstate");
  xtrain::SolverOptions options;
  options.device = xtrain::Device::cpu();
  options.verbose_nets = false;
  std::unique_ptr<xtrain::Solver> solver = xtrain::create_solver(param, options);
  xtrain_fuzz::expect_only_xtrain_errors([&] { solver->restore(file.path()); });
  return 0;
}
