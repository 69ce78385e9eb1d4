// DummyData (dummy_data_param): tops filled by fillers, no bottoms; for tests,
// benchmarks and nets that need a constant input.
//  - Fillers: none (all tops zero), one for every top, or one per top.
//  - Shapes: `shape` once for every top or once per top, or the legacy
//    num/channels/height/width (each once, or once per top), not both.
// The tops are shaped and the constant fillers applied once, at setup; only
// the tops with a non-constant filler are refilled on every forward (Caffe's
// refill rule), so a constant top that a later layer changes stays changed.
//
// Refills of independent draws per element (uniform, gaussian without
// sparse, xavier, msra) are Philox draws (src/core/random_fill.hpp) keyed by
// one 64-bit seed per forward from the layer's stream, top i being Philox
// stream i; on a GPU a kernel draws them into the top where it lies, the same
// bits as the CPU. The other refilled fillers (positive_unitball's row sums,
// bilinear, sparse gaussian) fill on the host from the layer's stream, after
// that seed, and the top is uploaded at its first GPU read.
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/random_fill.hpp"
#include "layers/builtin_layers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/filler.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/random_kernels.hpp"
#endif

namespace xtrain {
namespace {

class DummyDataLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "DummyData"; }
  int exact_num_bottom_blobs() const override { return 0; }
  int min_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec&, const BlobVec& top) override {
    const DummyDataParameter& dummy = param_.dummy_data_param();
    const int tops = static_cast<int>(top.size());
    const int filler_count = dummy.data_filler_size();
    XTRAIN_CHECK(filler_count <= 1 || filler_count == tops, where(), " has ", filler_count,
                 " data_filler entries for ", tops, " tops; give none (zeros), one for all ",
                 "tops, or one per top");
    fillers_.clear();
    filler_params_.clear();
    if (filler_count == 0) {
      FillerParameter zeros;
      zeros.set_type("constant");
      zeros.set_value(0);
      add_filler(zeros);
    } else {
      for (int i = 0; i < filler_count; ++i) add_filler(dummy.data_filler(i));
    }

    const bool legacy = dummy.num_size() > 0 || dummy.channels_size() > 0 ||
                        dummy.height_size() > 0 || dummy.width_size() > 0;
    if (legacy) {
      XTRAIN_CHECK(dummy.shape_size() == 0, where(),
                   " gives both shape and num/channels/height/width; use only shape");
      check_count(dummy.num_size(), tops, "num");
      check_count(dummy.channels_size(), tops, "channels");
      check_count(dummy.height_size(), tops, "height");
      check_count(dummy.width_size(), tops, "width");
    } else {
      check_count(dummy.shape_size(), tops, "shape");
    }
    for (int i = 0; i < tops; ++i) {
      if (legacy) {
        top[i]->reshape(
            {legacy_dim(dummy.num(), i, "num"), legacy_dim(dummy.channels(), i, "channels"),
             legacy_dim(dummy.height(), i, "height"), legacy_dim(dummy.width(), i, "width")});
      } else {
        const BlobShape& shape = dummy.shape(dummy.shape_size() == 1 ? 0 : i);
        for (int d = 0; d < shape.dim_size(); ++d) {
          XTRAIN_CHECK(shape.dim(d) >= 0 && shape.dim(d) <= std::numeric_limits<int>::max(),
                       where(), ": dimension ", d, " of the shape of top ", i, " is ", shape.dim(d),
                       "; dimensions must be between 0 and 2^31 - 1");
        }
        top[i]->reshape(shape);
      }
    }
    draws_.assign(top.size(), std::nullopt);
    for (std::size_t i = 0; i < top.size(); ++i) {
      if (!refilled(i)) continue;
      guard_fill(i, *top[i], [&] {
        draws_[i] = per_element_distribution(filler_params_[filler_of(i)], *top[i]);
      });
    }
    // The constant tops now, once; the others on every forward.
    for (std::size_t i = 0; i < top.size(); ++i) {
      if (!refilled(i)) fill_on_host(i, *top[i]);
    }
  }

  // The tops keep the shapes given at setup.
  void reshape(const BlobVec&, const BlobVec&) override {}

 protected:
  void forward_cpu(const BlobVec&, const BlobVec& top) override {
    const Philox4x32Key key = next_key();
    for (std::size_t i = 0; i < top.size(); ++i) {
      if (draws_[i]) {
        philox_fill_cpu(philox_fill(i, key), top[i]->mutable_cpu_data(), top[i]->count());
      }
    }
    refill_on_host(top);
  }

  void backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec&, const BlobVec& top) override {
    const Philox4x32Key key = next_key();
    for (std::size_t i = 0; i < top.size(); ++i) {
      if (draws_[i] && top[i]->count() > 0) {
        cuda::philox_fill(philox_fill(i, key), top[i]->mutable_gpu_data(), top[i]->count());
      }
    }
    refill_on_host(top);
  }

  void backward_gpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}
#endif

 private:
  void add_filler(const FillerParameter& filler) {
    try {
      fillers_.push_back(make_filler(filler));
    } catch (const Error& error) {
      throw Error(where() + ": data_filler: " + error.what());
    }
    filler_params_.push_back(filler);
  }

  void check_count(int given, int tops, const char* field) const {
    XTRAIN_CHECK(given == 1 || given == tops, where(), " has ", given, " '", field, "' values for ",
                 tops, " tops; give one for all tops or one per top");
  }

  template <typename Values>
  int legacy_dim(const Values& values, int top_index, const char* field) const {
    const std::uint32_t value = values.size() == 1 ? values.Get(0) : values.Get(top_index);
    XTRAIN_CHECK(value <= static_cast<std::uint32_t>(std::numeric_limits<int>::max()), where(),
                 ": ", field, " ", value, " is too large");
    return static_cast<int>(value);
  }

  // The filler of top i: fillers_[i], or fillers_[0] when one serves all.
  std::size_t filler_of(std::size_t top_index) const { return fillers_.size() > 1 ? top_index : 0; }
  bool refilled(std::size_t top_index) const {
    return filler_params_[filler_of(top_index)].type() != "constant";
  }

  template <typename Body>
  void guard_fill(std::size_t top_index, const Blob& blob, Body body) const {
    try {
      body();
    } catch (const Error& error) {
      throw Error(where() + ": filling top " + std::to_string(top_index) + " (" +
                  blob.shape_string() + "): " + error.what());
    }
  }

  void fill_on_host(std::size_t top_index, Blob& blob) {
    guard_fill(top_index, blob, [&] { fillers_[filler_of(top_index)]->fill(blob, random()); });
  }

  // The refilled tops that no Philox draw fills.
  void refill_on_host(const BlobVec& top) {
    for (std::size_t i = 0; i < top.size(); ++i) {
      if (refilled(i) && !draws_[i]) fill_on_host(i, *top[i]);
    }
  }

  // This forward's Philox key, from the layer's stream (when a top needs it).
  Philox4x32Key next_key() {
    for (const auto& draw : draws_) {
      if (!draw) continue;
      const std::uint64_t high = random().engine()();
      const std::uint64_t low = random().engine()();
      return philox_key((high << 32) | low);
    }
    return philox_key(0);
  }

  PhiloxFill philox_fill(std::size_t top_index, const Philox4x32Key& key) const {
    return PhiloxFill{*draws_[top_index], key, static_cast<std::uint32_t>(top_index)};
  }

  std::vector<std::unique_ptr<Filler>> fillers_;
  std::vector<FillerParameter> filler_params_;
  // Per top: the distribution of its Philox refill, if it has one.
  std::vector<std::optional<RandomDistribution>> draws_;
};

}  // namespace

void register_dummy_data_layer(LayerRegistry& registry) {
  add_layer<DummyDataLayer>(registry, "DummyData");
}

}  // namespace xtrain
