// DummyData (dummy_data_param): tops filled by fillers, no bottoms; for tests,
// benchmarks and nets that need a constant input.
//  - Fillers: none (all tops zero), one for every top, or one per top.
//  - Shapes: `shape` once for every top or once per top, or the legacy
//    num/channels/height/width (each once, or once per top), not both.
// The tops are shaped and the constant fillers applied once, at setup; only
// the tops with a non-constant filler are refilled on every forward (Caffe's
// refill rule), so a constant top that a later layer changes stays changed.
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "layers/builtin_layers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/filler.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

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
    refill_.clear();
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
    // The constant tops now, once; the others on every forward.
    fill(top, /*constant=*/true);
  }

  // The tops keep the shapes given at setup.
  void reshape(const BlobVec&, const BlobVec&) override {}

 protected:
  void forward_cpu(const BlobVec&, const BlobVec& top) override { fill(top, /*constant=*/false); }

  void backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

 private:
  void add_filler(const FillerParameter& filler) {
    try {
      fillers_.push_back(make_filler(filler));
    } catch (const Error& error) {
      throw Error(where() + ": data_filler: " + error.what());
    }
    refill_.push_back(filler.type() != "constant");
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

  // Fills the tops whose filler is constant (or not): the filler of top i is
  // fillers_[i], or fillers_[0] when one filler serves all.
  void fill(const BlobVec& top, bool constant) {
    for (std::size_t i = 0; i < top.size(); ++i) {
      const std::size_t filler = fillers_.size() > 1 ? i : 0;
      if (refill_[filler] == constant) continue;
      try {
        fillers_[filler]->fill(*top[i], random());
      } catch (const Error& error) {
        throw Error(where() + ": filling top " + std::to_string(i) + " (" + top[i]->shape_string() +
                    "): " + error.what());
      }
    }
  }

  std::vector<std::unique_ptr<Filler>> fillers_;
  std::vector<bool> refill_;  // per filler: not constant, so refilled every forward
};

}  // namespace

void register_dummy_data_layer(LayerRegistry& registry) {
  add_layer<DummyDataLayer>(registry, "DummyData");
}

}  // namespace xtrain
