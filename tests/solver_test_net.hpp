// Test-only layers and nets for the solver tests, small enough that every
// gradient and update can be computed by hand:
//
//   SolverTestRows       no bottom; top [batch, width] holds the next `batch`
//                        rows of kRows (cycling), so successive forwards see
//                        different data and iter_size 2 with batch 1 sees the
//                        same rows as batch 2.  Shape from input_param.
//   SolverTestLinear     y = x W^T + b, W [out, in], b [out] (inner_product_param:
//                        num_output, bias_term, weight_filler, bias_filler).
//                        Parameter gradients accumulate, as in every layer.
//   SolverTestHalfSquare loss = sum(x^2) / (2 N), N = bottom.shape(0);
//                        dloss/dx = x / N.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "device_test_support.hpp"
#include "xtrain/filler.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/solver.hpp"

namespace xtrain::testing {

constexpr int kRowCount = 4;
constexpr int kRowWidth = 2;
constexpr float kRows[kRowCount][kRowWidth] = {
    {1.0f, 0.5f}, {2.0f, -1.0f}, {-1.0f, 1.5f}, {0.5f, 2.0f}};

class SolverTestRowsLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "SolverTestRows"; }
  int exact_num_bottom_blobs() const override { return 0; }
  int exact_num_top_blobs() const override { return 1; }
  void layer_setup(const BlobVec&, const BlobVec&) override {
    const BlobShape& shape = param_.input_param().shape(0);
    batch_ = static_cast<int>(shape.dim(0));
    width_ = static_cast<int>(shape.dim(1));
  }
  void reshape(const BlobVec&, const BlobVec& top) override { top[0]->reshape({batch_, width_}); }

 protected:
  void forward_cpu(const BlobVec&, const BlobVec& top) override {
    float* out = top[0]->mutable_cpu_data();
    for (int n = 0; n < batch_; ++n, ++cursor_) {
      for (int c = 0; c < width_; ++c) out[n * width_ + c] = kRows[cursor_ % kRowCount][c];
    }
  }
  void backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

 private:
  int batch_ = 1;
  int width_ = 1;
  int cursor_ = 0;
};

class SolverTestLinearLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "SolverTestLinear"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }
  void layer_setup(const BlobVec& bottom, const BlobVec&) override {
    const InnerProductParameter& ip = param_.inner_product_param();
    outputs_ = static_cast<int>(ip.num_output());
    inputs_ = static_cast<int>(bottom[0]->count(1));
    if (!blobs_.empty()) return;  // given in the prototxt
    blobs_.push_back(std::make_shared<Blob>(std::vector<int>{outputs_, inputs_}));
    make_filler(ip.weight_filler())->fill(*blobs_[0], random());
    if (ip.bias_term()) {
      blobs_.push_back(std::make_shared<Blob>(std::vector<int>{outputs_}));
      make_filler(ip.bias_filler())->fill(*blobs_[1], random());
    }
  }
  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    top[0]->reshape({bottom[0]->shape(0), outputs_});
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->cpu_data();
    const float* w = blobs_[0]->cpu_data();
    float* y = top[0]->mutable_cpu_data();
    for (int n = 0; n < bottom[0]->shape(0); ++n) {
      for (int o = 0; o < outputs_; ++o) {
        float sum = blobs_.size() > 1 ? blobs_[1]->cpu_data()[o] : 0.0f;
        for (int i = 0; i < inputs_; ++i) sum += w[o * inputs_ + i] * x[n * inputs_ + i];
        y[n * outputs_ + o] = sum;
      }
    }
  }
  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const float* x = bottom[0]->cpu_data();
    const float* dy = top[0]->cpu_diff();
    const int batch = bottom[0]->shape(0);
    if (param_propagate_down(0)) {
      float* dw = blobs_[0]->mutable_cpu_diff();
      for (int n = 0; n < batch; ++n)
        for (int o = 0; o < outputs_; ++o)
          for (int i = 0; i < inputs_; ++i)
            dw[o * inputs_ + i] += dy[n * outputs_ + o] * x[n * inputs_ + i];
    }
    if (blobs_.size() > 1 && param_propagate_down(1)) {
      float* db = blobs_[1]->mutable_cpu_diff();
      for (int n = 0; n < batch; ++n)
        for (int o = 0; o < outputs_; ++o) db[o] += dy[n * outputs_ + o];
    }
    if (propagate_down[0]) {
      const float* w = blobs_[0]->cpu_data();
      float* dx = bottom[0]->mutable_cpu_diff();
      for (int n = 0; n < batch; ++n)
        for (int i = 0; i < inputs_; ++i) {
          float sum = 0;
          for (int o = 0; o < outputs_; ++o) sum += dy[n * outputs_ + o] * w[o * inputs_ + i];
          dx[n * inputs_ + i] = sum;
        }
    }
  }

 private:
  int outputs_ = 1;
  int inputs_ = 1;
};

class SolverTestHalfSquareLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "SolverTestHalfSquare"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }
  void layer_setup(const BlobVec&, const BlobVec&) override {
    if (param_.loss_weight_size() == 0) param_.add_loss_weight(1.0f);
  }
  void reshape(const BlobVec&, const BlobVec& top) override { top[0]->reshape(std::vector<int>{}); }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->cpu_data();
    double sum = 0;
    for (std::size_t j = 0; j < bottom[0]->count(); ++j) sum += static_cast<double>(x[j]) * x[j];
    top[0]->mutable_cpu_data()[0] = static_cast<float>(sum / (2.0 * bottom[0]->shape(0)));
  }
  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float scale = top[0]->cpu_diff()[0] / static_cast<float>(bottom[0]->shape(0));
    const float* x = bottom[0]->cpu_data();
    float* dx = bottom[0]->mutable_cpu_diff();
    for (std::size_t j = 0; j < bottom[0]->count(); ++j) dx[j] = scale * x[j];
  }
};

inline void register_solver_test_layers() {
  LayerRegistry& registry = LayerRegistry::global();
  if (registry.has("SolverTestRows")) return;
  add_layer<SolverTestRowsLayer>(registry, "SolverTestRows");
  add_layer<SolverTestLinearLayer>(registry, "SolverTestLinear");
  add_layer<SolverTestHalfSquareLayer>(registry, "SolverTestHalfSquare");
}

// rows (batch x width) -> linear (num_output, optional bias) -> half square
// loss named "loss". `extra_linear` is spliced into the linear layer's text
// (param specs, blobs), `extra_inner_product` into its inner_product_param
// (fillers).
inline NetParameter linear_regression_net(int batch, int width, int num_output, bool bias,
                                          const std::string& extra_linear = "",
                                          const std::string& extra_inner_product = "") {
  register_solver_test_layers();
  const std::string text =
      "name: 'linear_regression'\n"
      "layer { name: 'rows' type: 'SolverTestRows' top: 'x'\n"
      "  input_param { shape { dim: " +
      std::to_string(batch) + " dim: " + std::to_string(width) +
      " } } }\n"
      "layer { name: 'linear' type: 'SolverTestLinear' bottom: 'x' top: 'y'\n"
      "  inner_product_param { num_output: " +
      std::to_string(num_output) + " bias_term: " + (bias ? "true" : "false") + " " +
      extra_inner_product + " }\n" + extra_linear +
      " }\n"
      "layer { name: 'loss' type: 'SolverTestHalfSquare' bottom: 'y' top: 'loss' }\n";
  NetParameter param;
  read_proto_from_text_string(text, &param, "linear_regression_net");
  return param;
}

// A solver over `train_net` (as train_net_param) with a fixed lr of 0.1, 3
// iterations and no snapshots; `extra` (solver prototxt text) overrides.
inline SolverParameter solver_param(const NetParameter& train_net, const std::string& extra) {
  SolverParameter param;
  read_proto_from_text_string(
      "base_lr: 0.1 lr_policy: 'fixed' max_iter: 3 snapshot_after_train: false random_seed: 1",
      &param, "solver test defaults");
  SolverParameter overrides;
  read_proto_from_text_string(extra, &overrides, "solver test");
  param.MergeFrom(overrides);
  *param.mutable_train_net_param() = train_net;
  return param;
}

// Quiet, on the test's current device (device_test_support.hpp).
inline SolverOptions quiet_solver_options() {
  SolverOptions options;
  options.verbose_nets = false;
  options.device = current_device();
  return options;
}

// What solve() logs (everything, INFO included), captured from stderr.
inline std::string solve_and_capture_log(Solver& solver) {
  const LogSeverity saved = min_log_severity();
  set_min_log_severity(LogSeverity::kInfo);
  ::testing::internal::CaptureStderr();
  solver.solve();
  const std::string log = ::testing::internal::GetCapturedStderr();
  set_min_log_severity(saved);
  return log;
}

// One weight w = 1 applied to column 0 of the rows (1, 2, -1, 0.5, ...):
// loss = (w x)^2 / 2, dloss/dw = w x^2.
inline NetParameter scalar_net(int batch = 1) {
  return linear_regression_net(batch, 1, 1, false, "blobs { shape { dim: 1 dim: 1 } data: 1 }");
}

// scalar_net() as the net_param of a solver with every kind of event: 6
// iterations, lr from "inv", a display every 2, a test of 2 iterations every
// 3 and a snapshot to `snapshot_prefix` every 3.
inline SolverParameter eventful_solver(const std::string& snapshot_prefix) {
  SolverParameter param =
      solver_param(scalar_net(),
                   "base_lr: 0.01 lr_policy: 'inv' gamma: 0.1 power: 0.75 max_iter: 6 "
                   "display: 2 test_iter: 2 test_interval: 3 snapshot: 3");
  param.clear_train_net_param();
  *param.mutable_net_param() = scalar_net();
  param.set_snapshot_prefix(snapshot_prefix);
  return param;
}

}  // namespace xtrain::testing
