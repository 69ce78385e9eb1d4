// Runs one layer on two devices and compares everything it computes, as
// ggml's test-backend-ops does for every op on every backend.
//
// The layer is set up twice from the same LayerParameter, once per device;
// the second copy gets the first one's learnable blobs (after `prepare`), both
// get identical random bottoms and identical random top diffs, and both run
// forward and backward. Then every top, every bottom diff that was asked for,
// and every learnable blob's data (BatchNorm updates its statistics in
// forward) and diff are compared element by element. The difference of x and
// y is |x - y| / max(|x|, |y|, 1e-3 * m), m the largest magnitude in the blob:
// relative, except that elements that are tiny next to the rest of their blob
// (the result of cancellation) are measured against the blob's scale.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "layer_test_support.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/device.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/random.hpp"

namespace xtrain::testing {

// One bottom: its shape and how it is filled.
struct BottomSpec {
  std::vector<int> shape;
  float low = -1.0f;
  float high = 1.0f;
  int classes = 0;            // > 0: integer labels in [0, classes)
  bool gradient = true;       // whether backward is asked for its diff
  std::vector<float> values;  // non-empty: exactly these (boxes, ground truth)
};

inline BottomSpec uniform(std::vector<int> shape, float low = -1.0f, float high = 1.0f) {
  return BottomSpec{std::move(shape), low, high, 0, true, {}};
}
// Values in [low, high] that get no gradient (targets, infogain matrices).
inline BottomSpec constant_input(std::vector<int> shape, float low, float high) {
  return BottomSpec{std::move(shape), low, high, 0, false, {}};
}
inline BottomSpec labels(std::vector<int> shape, int classes) {
  return BottomSpec{std::move(shape), 0.0f, 0.0f, classes, false, {}};
}
// Given values that get no gradient (prior boxes, ground-truth rows).
inline BottomSpec fixed(std::vector<int> shape, std::vector<float> values) {
  return BottomSpec{std::move(shape), 0.0f, 0.0f, 0, false, std::move(values)};
}

struct CrossDeviceCase {
  std::string name;  // the test's name: letters, digits, '_'
  std::string prototxt;
  std::vector<BottomSpec> bottoms;
  int tops = 1;
  Phase phase = TRAIN;
  bool backward = true;  // false for layers without a gradient (Accuracy, ArgMax, ...)
  float tolerance = 1e-4f;
  // Gives learnable blobs that setup leaves trivial meaningful values
  // (BatchNorm's stored statistics); runs on the first layer only.
  std::function<void(Layer&)> prepare;
};

// gtest prints a case by its name.
inline void PrintTo(const CrossDeviceCase& c, std::ostream* out) { *out << c.name; }

// The largest difference found and where.
struct CrossDeviceDifference {
  double largest = 0;
  std::string where = "no difference";
};

namespace detail {

constexpr std::uint64_t kCrossDeviceSeed = 1701;

struct LayerRun {
  std::unique_ptr<Layer> layer;
  std::vector<std::unique_ptr<Blob>> bottoms;
  std::vector<std::unique_ptr<Blob>> tops;

  static BlobVec pointers(const std::vector<std::unique_ptr<Blob>>& blobs) {
    BlobVec result;
    for (const auto& blob : blobs) result.push_back(blob.get());
    return result;
  }
  BlobVec bottom_vec() const { return pointers(bottoms); }
  BlobVec top_vec() const { return pointers(tops); }
};

inline void fill_bottom(Blob& blob, const BottomSpec& spec, std::uint64_t seed) {
  RandomStream random(seed);
  float* data = blob.mutable_cpu_data();
  if (blob.count() == 0) return;
  if (!spec.values.empty()) {
    if (spec.values.size() != blob.count()) {
      ADD_FAILURE() << spec.values.size() << " fixed values for a bottom of " << blob.count();
    }
    std::copy_n(spec.values.begin(), std::min(spec.values.size(), blob.count()), data);
  } else if (spec.classes > 0) {
    random.uniform(blob.count(), 0.0f, static_cast<float>(spec.classes), data);
    for (std::size_t i = 0; i < blob.count(); ++i) {
      data[i] = std::min(std::floor(data[i]), static_cast<float>(spec.classes - 1));
    }
  } else {
    random.uniform(blob.count(), spec.low, spec.high, data);
  }
  // Bottom diffs start as garbage, the same on both devices: a layer must
  // write every diff it is asked for.
  std::fill(blob.mutable_cpu_diff(), blob.mutable_cpu_diff() + blob.count(), 7.0f);
}

inline LayerRun set_up_on(const CrossDeviceCase& c, const Device& device,
                          const LayerPrecision& precision = {}) {
  LayerRun run;
  run.layer = LayerRegistry::global().create(layer_param_from(c.prototxt, c.phase));
  run.layer->set_device(device);
  run.layer->set_precision(precision);
  run.layer->seed(kCrossDeviceSeed);
  for (std::size_t i = 0; i < c.bottoms.size(); ++i) {
    run.bottoms.push_back(std::make_unique<Blob>(c.bottoms[i].shape));
    fill_bottom(*run.bottoms.back(), c.bottoms[i], kCrossDeviceSeed + 10 + i);
  }
  for (int i = 0; i < c.tops; ++i) run.tops.push_back(std::make_unique<Blob>());
  run.layer->setup(run.bottom_vec(), run.top_vec());
  return run;
}

inline void forward_and_backward(LayerRun& run, const CrossDeviceCase& c,
                                 const std::vector<bool>& propagate_down) {
  for (auto& blob : run.layer->blobs()) {
    std::fill(blob->mutable_cpu_diff(), blob->mutable_cpu_diff() + blob->count(), 0.0f);
  }
  run.layer->seed(kCrossDeviceSeed);  // the same dropout mask on both devices
  run.layer->forward(run.bottom_vec(), run.top_vec());
  if (!c.backward) return;
  for (std::size_t t = 0; t < run.tops.size(); ++t) {
    Blob& top = *run.tops[t];
    RandomStream random(kCrossDeviceSeed + 100 + t);
    if (top.count() > 0) random.uniform(top.count(), -1.0f, 1.0f, top.mutable_cpu_diff());
  }
  run.layer->backward(run.top_vec(), propagate_down, run.bottom_vec());
}

inline void compare_values(const std::string& what, const float* x, const float* y,
                           std::size_t count, CrossDeviceDifference& difference) {
  float magnitude = 0;
  for (std::size_t i = 0; i < count; ++i) {
    magnitude = std::max({magnitude, std::fabs(x[i]), std::fabs(y[i])});
  }
  const float floor = std::max(1e-3f * magnitude, std::numeric_limits<float>::min());
  for (std::size_t i = 0; i < count; ++i) {
    if (x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i]))) continue;
    double relative = std::numeric_limits<double>::infinity();
    if (std::isfinite(x[i]) && std::isfinite(y[i])) {
      relative = std::fabs(static_cast<double>(x[i]) - y[i]) /
                 std::max({std::fabs(x[i]), std::fabs(y[i]), floor});
    }
    if (relative > difference.largest) {
      std::ostringstream where;
      where << what << " element " << i << ": " << x[i] << " vs " << y[i];
      difference.largest = relative;
      difference.where = where.str();
    }
  }
}

inline void compare_blobs(const std::string& what, const Blob& x, const Blob& y, bool diff,
                          CrossDeviceDifference& difference) {
  if (x.shape() != y.shape()) {
    difference.largest = std::numeric_limits<double>::infinity();
    difference.where = what + ": shapes " + x.shape_string() + " and " + y.shape_string();
    return;
  }
  compare_values(what, diff ? x.cpu_diff() : x.cpu_data(), diff ? y.cpu_diff() : y.cpu_data(),
                 x.count(), difference);
}

}  // namespace detail

// Runs `c` on `first` and on `second` and returns the largest difference.
// `tamper` (tests of this harness) may change the second layer after it got
// the first one's learnable blobs. Both layers compute in `precision`.
inline CrossDeviceDifference compare_across_devices(
    const CrossDeviceCase& c, const Device& first, const Device& second,
    const std::function<void(Layer&)>& tamper = nullptr, const LayerPrecision& precision = {}) {
  detail::LayerRun a = detail::set_up_on(c, first, precision);
  if (c.prepare) c.prepare(*a.layer);
  detail::LayerRun b = detail::set_up_on(c, second, precision);
  CrossDeviceDifference difference;
  if (a.layer->blobs().size() != b.layer->blobs().size()) {
    difference.largest = std::numeric_limits<double>::infinity();
    difference.where = "different numbers of learnable blobs";
    return difference;
  }
  for (std::size_t i = 0; i < a.layer->blobs().size(); ++i) {
    const Blob& from = *a.layer->blobs()[i];
    Blob& to = *b.layer->blobs()[i];
    to.reshape_like(from);
    std::copy(from.cpu_data(), from.cpu_data() + from.count(), to.mutable_cpu_data());
  }
  if (tamper) tamper(*b.layer);

  std::vector<bool> propagate_down;
  for (const BottomSpec& spec : c.bottoms) propagate_down.push_back(c.backward && spec.gradient);
  detail::forward_and_backward(a, c, propagate_down);
  detail::forward_and_backward(b, c, propagate_down);

  for (std::size_t t = 0; t < a.tops.size(); ++t) {
    detail::compare_blobs("top " + std::to_string(t), *a.tops[t], *b.tops[t], false, difference);
  }
  for (std::size_t i = 0; i < a.bottoms.size(); ++i) {
    if (!propagate_down[i]) continue;
    detail::compare_blobs("bottom diff " + std::to_string(i), *a.bottoms[i], *b.bottoms[i], true,
                          difference);
  }
  for (std::size_t i = 0; i < a.layer->blobs().size(); ++i) {
    const std::string name = "learnable blob " + std::to_string(i);
    detail::compare_blobs(name + " data", *a.layer->blobs()[i], *b.layer->blobs()[i], false,
                          difference);
    if (c.backward && a.layer->param_propagate_down(static_cast<int>(i))) {
      detail::compare_blobs(name + " diff", *a.layer->blobs()[i], *b.layer->blobs()[i], true,
                            difference);
    }
  }
  return difference;
}

// Every case of cross_device_layer_test.cpp (one per computing layer type, or
// more), for other comparisons over the same layers.
std::vector<CrossDeviceCase> every_cross_device_case();

}  // namespace xtrain::testing
