// examples/custom_layer: an application that adds a layer type of its own
// (HardSwish, hard_swish_layer.*) to xtrain, checks the layer's gradient
// against finite differences, and trains a small classifier whose prototxt
// names the new type (points inside or outside a circle; always answering
// "outside" would keep the loss near 0.5). Exits 1 if the gradient is wrong
// or the loss does not fall below 0.15.
// See docs/adding-a-layer.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include <xtrain/blob.hpp>
#include <xtrain/error.hpp>
#include <xtrain/layer_registry.hpp>
#include <xtrain/net.hpp>
#include <xtrain/proto_io.hpp>
#include <xtrain/solver.hpp>

#include "hard_swish_layer.hpp"

namespace {

// The largest relative difference between the layer's gradient and central
// differences of  loss = sum(probe * y)  over x in [-4, 4] (both flat
// pieces and the curve between).
double gradient_error() {
  xtrain::LayerParameter param;
  xtrain::read_proto_from_text_string("name: 'hs' type: 'HardSwish'", &param);
  std::unique_ptr<xtrain::Layer> layer = xtrain::LayerRegistry::global().create(param);
  xtrain::Blob x({2, 3, 4, 5});
  xtrain::Blob y;
  std::mt19937 random(7);
  std::uniform_real_distribution<float> values(-4.0f, 4.0f);
  for (std::size_t i = 0; i < x.count(); ++i) x.mutable_cpu_data()[i] = values(random);
  layer->setup({&x}, {&y});
  layer->forward({&x}, {&y});
  std::vector<float> probe(y.count());
  for (float& p : probe) p = values(random);
  std::copy(probe.begin(), probe.end(), y.mutable_cpu_diff());
  layer->backward({&y}, {true}, {&x});
  const std::vector<float> analytic(x.cpu_diff(), x.cpu_diff() + x.count());

  auto loss = [&] {
    layer->forward({&x}, {&y});
    double sum = 0;
    for (std::size_t i = 0; i < y.count(); ++i) sum += double(probe[i]) * y.cpu_data()[i];
    return sum;
  };
  const float step = 1e-2f;
  double worst = 0;
  for (std::size_t i = 0; i < x.count(); ++i) {
    float* value = x.mutable_cpu_data() + i;
    const float saved = *value;
    if (std::fabs(std::fabs(saved) - 3.0f) < 2 * step) continue;  // the kinks
    *value = saved + step;
    const double up = loss();
    *value = saved - step;
    const double down = loss();
    *value = saved;
    const double numeric = (up - down) / (2 * step);
    worst = std::max(worst, std::fabs(numeric - analytic[i]) / std::max(1.0, std::fabs(numeric)));
  }
  return worst;
}

constexpr const char* kNet = R"(
name: 'two_moons_ish'
layer { name: 'data' type: 'Input' top: 'data' input_param { shape { dim: 64 dim: 2 } } }
layer { name: 'label' type: 'Input' top: 'label' input_param { shape { dim: 64 } } }
layer { name: 'ip1' type: 'InnerProduct' bottom: 'data' top: 'ip1'
  inner_product_param { num_output: 16 weight_filler { type: 'xavier' } } }
layer { name: 'act' type: 'HardSwish' bottom: 'ip1' top: 'act' }
layer { name: 'ip2' type: 'InnerProduct' bottom: 'act' top: 'ip2'
  inner_product_param { num_output: 2 weight_filler { type: 'xavier' } } }
layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip2' bottom: 'label' top: 'loss' }
)";

// Points inside (label 0) and outside (label 1) a circle of radius 1.5.
void fill_batch(xtrain::Net& net, std::mt19937& random) {
  std::uniform_real_distribution<float> coordinate(-3.0f, 3.0f);
  float* data = net.blob_by_name("data")->mutable_cpu_data();
  float* label = net.blob_by_name("label")->mutable_cpu_data();
  for (int n = 0; n < 64; ++n) {
    const float a = coordinate(random), b = coordinate(random);
    data[2 * n] = a;
    data[2 * n + 1] = b;
    label[n] = a * a + b * b < 2.25f ? 0.0f : 1.0f;
  }
}

}  // namespace

int main() {
  try {
    register_hard_swish_layer();

    const double error = gradient_error();
    std::printf("gradient check: largest relative error %.2e (%s)\n", error,
                error < 1e-3 ? "ok" : "WRONG");
    if (error >= 1e-3) return 1;

    xtrain::SolverParameter solver = xtrain::read_solver_params_from_text(
        "base_lr: 0.1 momentum: 0.9 lr_policy: 'fixed' max_iter: 600 random_seed: 3 "
        "solver_mode: CPU snapshot_prefix: '/tmp/custom_layer'",
        "custom_layer solver");
    *solver.mutable_net_param() = xtrain::read_net_params_from_text(kNet, "custom_layer net");
    xtrain::SolverOptions options;
    options.verbose_nets = false;
    std::unique_ptr<xtrain::Solver> trainer = xtrain::create_solver(solver, options);
    std::mt19937 random(11);
    float first = 0, last = 0;
    for (int iteration = 0; iteration < 600; ++iteration) {
      fill_batch(trainer->net(), random);
      trainer->step(1);
      const float loss = trainer->net().blob_by_name("loss")->cpu_data()[0];
      if (iteration == 0) first = loss;
      last = loss;
      if (iteration % 100 == 0) std::printf("iteration %d: loss %.4f\n", iteration, loss);
    }
    std::printf("loss %.4f -> %.4f (%s)\n", first, last, last < 0.15f ? "learned" : "NOT LEARNED");
    return last < 0.15f ? 0 : 1;
  } catch (const xtrain::Error& error) {
    std::fprintf(stderr, "custom_layer: %s\n", error.what());
    return 1;
  }
}
