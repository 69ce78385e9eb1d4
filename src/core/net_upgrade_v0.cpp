// V0 -> V1 net upgrade: the flat V0LayerParameter of each layer is spread
// over the V1 layer's typed *_param messages, and "padding" layers become
// the pad of the conv/pool layer they feed.
//
// A V0 setting that has no place in the layer's new parameters (say
// num_output on a relu) is dropped with a warning, as Caffe did; an unknown
// V0 type or a padding layer Caffe could not fold is an error.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <map>
#include <set>

#include "core/net_upgrade.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {
namespace {

V1LayerParameter::LayerType v1_type_of_v0(const std::string& source, const std::string& layer,
                                          const std::string& v0_type) {
  static const std::map<std::string, V1LayerParameter::LayerType> kTypes = {
      {"accuracy", V1LayerParameter::ACCURACY},
      {"bnll", V1LayerParameter::BNLL},
      {"concat", V1LayerParameter::CONCAT},
      {"conv", V1LayerParameter::CONVOLUTION},
      {"data", V1LayerParameter::DATA},
      {"dropout", V1LayerParameter::DROPOUT},
      {"euclidean_loss", V1LayerParameter::EUCLIDEAN_LOSS},
      {"flatten", V1LayerParameter::FLATTEN},
      {"hdf5_data", V1LayerParameter::HDF5_DATA},
      {"hdf5_output", V1LayerParameter::HDF5_OUTPUT},
      {"im2col", V1LayerParameter::IM2COL},
      {"images", V1LayerParameter::IMAGE_DATA},
      {"infogain_loss", V1LayerParameter::INFOGAIN_LOSS},
      {"innerproduct", V1LayerParameter::INNER_PRODUCT},
      {"lrn", V1LayerParameter::LRN},
      {"multinomial_logistic_loss", V1LayerParameter::MULTINOMIAL_LOGISTIC_LOSS},
      {"pool", V1LayerParameter::POOLING},
      {"relu", V1LayerParameter::RELU},
      {"sigmoid", V1LayerParameter::SIGMOID},
      {"softmax", V1LayerParameter::SOFTMAX},
      {"softmax_loss", V1LayerParameter::SOFTMAX_LOSS},
      {"split", V1LayerParameter::SPLIT},
      {"tanh", V1LayerParameter::TANH},
      {"window_data", V1LayerParameter::WINDOW_DATA},
  };
  const auto found = kTypes.find(v0_type);
  if (found != kTypes.end()) return found->second;
  std::string known;
  for (const auto& entry : kTypes) known += (known.empty() ? "" : ", ") + entry.first;
  throw Error("'" + source + "': layer '" + layer + "' has the V0 type '" + v0_type +
              "', which no later format has (V0 types: " + known +
              "); rewrite the layer in the current format");
}

// Moves the settings of one V0 layer into its V1 form. Each layer type
// takes the settings it has; any other setting is dropped with a warning.
// Typed parameter messages are created only when a setting goes into them,
// so the upgraded text has no empty `<type>_param {}` blocks (as in Caffe).
class V0LayerConverter {
 public:
  V0LayerConverter(const std::string& source, const V0LayerParameter& v0, V1LayerParameter* v1,
                   std::vector<std::string>* dropped)
      : source_(source), v0_(v0), v1_(v1), dropped_(dropped) {}

  void convert() {
    const std::string& type = v0_.type();
    if (take(v0_.has_name(), "name")) v1_->set_name(v0_.name());
    if (take(v0_.has_type(), "type")) v1_->set_type(v1_type_of_v0(source_, v0_.name(), type));
    take(true, "blobs");
    take(true, "blobs_lr");
    take(true, "weight_decay");
    *v1_->mutable_blobs() = v0_.blobs();
    *v1_->mutable_blobs_lr() = v0_.blobs_lr();
    *v1_->mutable_weight_decay() = v0_.weight_decay();
    convert_transformation();

    if (type == "conv") {
      convert_convolution();
    } else if (type == "innerproduct") {
      convert_inner_product();
    } else if (type == "pool") {
      convert_pooling();
    } else if (type == "lrn") {
      convert_lrn();
    } else if (type == "dropout") {
      if (take(v0_.has_dropout_ratio(), "dropout_ratio")) {
        v1_->mutable_dropout_param()->set_dropout_ratio(v0_.dropout_ratio());
      }
    } else if (type == "concat") {
      if (take(v0_.has_concat_dim(), "concat_dim")) {
        v1_->mutable_concat_param()->set_concat_dim(v0_.concat_dim());
      }
    } else if (type == "hdf5_output") {
      if (take(v0_.has_hdf5_output_param(), "hdf5_output_param")) {
        *v1_->mutable_hdf5_output_param() = v0_.hdf5_output_param();
      }
    } else if (type == "infogain_loss") {
      if (take(v0_.has_source(), "source")) {
        v1_->mutable_infogain_loss_param()->set_source(v0_.source());
      }
    } else if (type == "data") {
      convert_data();
    } else if (type == "hdf5_data") {
      convert_hdf5_data();
    } else if (type == "images") {
      convert_image_data();
    } else if (type == "window_data") {
      convert_window_data();
    }
    report_dropped_settings();
  }

 private:
  // Marks a V0 setting as carried over when it is present.
  bool take(bool present, const char* field) {
    if (present) taken_.insert(field);
    return present;
  }

  void convert_transformation() {
    // Preprocessing goes to transform_param whatever the layer type.
    if (take(v0_.has_scale(), "scale")) v1_->mutable_transform_param()->set_scale(v0_.scale());
    if (take(v0_.has_meanfile(), "meanfile")) {
      v1_->mutable_transform_param()->set_mean_file(v0_.meanfile());
    }
    if (take(v0_.has_cropsize(), "cropsize")) {
      v1_->mutable_transform_param()->set_crop_size(v0_.cropsize());
    }
    if (take(v0_.has_mirror(), "mirror")) v1_->mutable_transform_param()->set_mirror(v0_.mirror());
  }

  // The fields V0 gives convolutions and inner products alike. `param`
  // returns the V1 parameter message, made only when a field is present.
  template <typename MutableParam>
  void convert_outputs_and_fillers(const MutableParam& param) {
    if (take(v0_.has_num_output(), "num_output")) param()->set_num_output(v0_.num_output());
    if (take(v0_.has_biasterm(), "biasterm")) param()->set_bias_term(v0_.biasterm());
    if (take(v0_.has_weight_filler(), "weight_filler")) {
      *param()->mutable_weight_filler() = v0_.weight_filler();
    }
    if (take(v0_.has_bias_filler(), "bias_filler")) {
      *param()->mutable_bias_filler() = v0_.bias_filler();
    }
  }

  // The fields V0 gives every data layer: its source and batch size.
  template <typename MutableParam>
  void convert_source_and_batch(const MutableParam& param) {
    if (take(v0_.has_source(), "source")) param()->set_source(v0_.source());
    if (take(v0_.has_batchsize(), "batchsize")) param()->set_batch_size(v0_.batchsize());
  }

  void convert_convolution() {
    auto conv = [this] { return v1_->mutable_convolution_param(); };
    convert_outputs_and_fillers(conv);
    if (take(v0_.has_pad(), "pad")) conv()->add_pad(v0_.pad());
    if (take(v0_.has_kernelsize(), "kernelsize")) conv()->add_kernel_size(v0_.kernelsize());
    if (take(v0_.has_group(), "group")) conv()->set_group(v0_.group());
    if (take(v0_.has_stride(), "stride")) conv()->add_stride(v0_.stride());
  }

  void convert_inner_product() {
    convert_outputs_and_fillers([this] { return v1_->mutable_inner_product_param(); });
  }

  void convert_pooling() {
    auto pool = [this] { return v1_->mutable_pooling_param(); };
    if (take(v0_.has_pad(), "pad")) pool()->set_pad(v0_.pad());
    if (take(v0_.has_kernelsize(), "kernelsize")) pool()->set_kernel_size(v0_.kernelsize());
    if (take(v0_.has_stride(), "stride")) pool()->set_stride(v0_.stride());
    if (take(v0_.has_pool(), "pool")) {
      // The two PoolMethod enums number MAX, AVE and STOCHASTIC alike.
      pool()->set_pool(static_cast<PoolingParameter::PoolMethod>(v0_.pool()));
    }
  }

  void convert_lrn() {
    auto lrn = [this] { return v1_->mutable_lrn_param(); };
    if (take(v0_.has_local_size(), "local_size")) lrn()->set_local_size(v0_.local_size());
    if (take(v0_.has_alpha(), "alpha")) lrn()->set_alpha(v0_.alpha());
    if (take(v0_.has_beta(), "beta")) lrn()->set_beta(v0_.beta());
    if (take(v0_.has_k(), "k")) lrn()->set_k(v0_.k());
  }

  void convert_data() {
    auto data = [this] { return v1_->mutable_data_param(); };
    convert_source_and_batch(data);
    if (take(v0_.has_rand_skip(), "rand_skip")) data()->set_rand_skip(v0_.rand_skip());
  }

  void convert_hdf5_data() {
    convert_source_and_batch([this] { return v1_->mutable_hdf5_data_param(); });
  }

  void convert_image_data() {
    auto images = [this] { return v1_->mutable_image_data_param(); };
    convert_source_and_batch(images);
    if (take(v0_.has_rand_skip(), "rand_skip")) images()->set_rand_skip(v0_.rand_skip());
    if (take(v0_.has_shuffle_images(), "shuffle_images")) {
      images()->set_shuffle(v0_.shuffle_images());
    }
    if (take(v0_.has_new_height(), "new_height")) images()->set_new_height(v0_.new_height());
    if (take(v0_.has_new_width(), "new_width")) images()->set_new_width(v0_.new_width());
  }

  void convert_window_data() {
    auto window = [this] { return v1_->mutable_window_data_param(); };
    convert_source_and_batch(window);
    if (take(v0_.has_det_fg_threshold(), "det_fg_threshold")) {
      window()->set_fg_threshold(v0_.det_fg_threshold());
    }
    if (take(v0_.has_det_bg_threshold(), "det_bg_threshold")) {
      window()->set_bg_threshold(v0_.det_bg_threshold());
    }
    if (take(v0_.has_det_fg_fraction(), "det_fg_fraction")) {
      window()->set_fg_fraction(v0_.det_fg_fraction());
    }
    if (take(v0_.has_det_context_pad(), "det_context_pad")) {
      window()->set_context_pad(v0_.det_context_pad());
    }
    if (take(v0_.has_det_crop_mode(), "det_crop_mode")) {
      window()->set_crop_mode(v0_.det_crop_mode());
    }
  }

  void report_dropped_settings() const {
    std::vector<const google::protobuf::FieldDescriptor*> present;
    v0_.GetReflection()->ListFields(v0_, &present);
    for (const google::protobuf::FieldDescriptor* field : present) {
      if (taken_.count(field->name()) > 0) continue;
      const std::string what = "sets " + field->name() + " on layer '" + v0_.name() +
                               "' (V0 type '" + v0_.type() +
                               "', which has no such setting): dropped";
      XLOG(WARNING) << "'" << source_ << "' " << what;
      if (dropped_) dropped_->push_back(what);
    }
  }

  const std::string& source_;
  const V0LayerParameter& v0_;
  V1LayerParameter* v1_;
  std::vector<std::string>* dropped_;
  std::set<std::string> taken_;
};

// A copy of `net` without its "padding" layers: each one's pad moves to the
// conv or pool layer that reads its output, which then reads the padding
// layer's input instead.
NetParameter fold_padding_layers(const std::string& source, const NetParameter& net) {
  NetParameter folded(net);
  folded.clear_layers();
  // The index of the layer that last wrote each blob; -1 for net inputs.
  std::map<std::string, int> last_writer;
  for (const std::string& input : net.input()) last_writer[input] = -1;

  for (int i = 0; i < net.layers_size(); ++i) {
    const V1LayerParameter& layer = net.layers(i);
    const V0LayerParameter& v0 = layer.layer();
    const bool is_padding = v0.type() == "padding";
    if (!is_padding) *folded.add_layers() = layer;
    for (int b = 0; b < layer.bottom_size(); ++b) {
      const std::string& blob = layer.bottom(b);
      const auto writer = last_writer.find(blob);
      XTRAIN_CHECK(writer != last_writer.end(), "'", source, "': layer '", v0.name(),
                   "' reads blob '", blob,
                   "', which no earlier layer writes and which is not a net input");
      if (writer->second < 0) continue;
      const V1LayerParameter& producer = net.layers(writer->second);
      if (producer.layer().type() != "padding") continue;
      const std::string& pad_name = producer.layer().name();
      XTRAIN_CHECK(!is_padding && (v0.type() == "conv" || v0.type() == "pool"), "'", source,
                   "': padding layer '", pad_name, "' feeds layer '", v0.name(), "' of type '",
                   v0.type(), "'; a padding layer can only be folded into a conv or pool layer");
      XTRAIN_CHECK(layer.bottom_size() == 1, "'", source, "': layer '", v0.name(),
                   "' reads padding layer '", pad_name, "' and ", layer.bottom_size() - 1,
                   " other blobs; a padded conv/pool layer must read one blob");
      XTRAIN_CHECK(producer.bottom_size() == 1 && producer.top_size() == 1, "'", source,
                   "': padding layer '", pad_name, "' has ", producer.bottom_size(),
                   " bottoms and ", producer.top_size(), " tops; it needs one of each");
      V1LayerParameter* consumer = folded.mutable_layers(folded.layers_size() - 1);
      consumer->mutable_layer()->set_pad(producer.layer().pad());
      consumer->set_bottom(b, producer.bottom(0));
    }
    for (const std::string& top : layer.top()) last_writer[top] = i;
  }
  return folded;
}

}  // namespace

bool net_needs_v0_to_v1_upgrade(const NetParameter& param) {
  for (const V1LayerParameter& layer : param.layers()) {
    if (layer.has_layer()) return true;
  }
  return false;
}

void upgrade_v0_net(const std::string& source, NetParameter* param,
                    std::vector<std::string>* dropped) {
  for (int i = 0; i < param->layers_size(); ++i) {
    XTRAIN_CHECK(param->layers(i).has_layer(), "'", source, "': layers entry ", i, " ('",
                 param->layers(i).name(),
                 "') is in the V1 format but others are in the V0 format (with a `layer { ... }` "
                 "inside); write every layer in one format");
  }
  const NetParameter folded = fold_padding_layers(source, *param);
  param->clear_layers();
  for (const V1LayerParameter& old_layer : folded.layers()) {
    V1LayerParameter* layer = param->add_layers();
    *layer->mutable_bottom() = old_layer.bottom();
    *layer->mutable_top() = old_layer.top();
    V0LayerConverter(source, old_layer.layer(), layer, dropped).convert();
  }
}

}  // namespace xtrain
