// Net for Python: built from a prototxt (and weights) in a phase, on the
// device set_mode_* chose; forward and backward over a range of layers, as
// pycaffe's _forward/_backward; weights copied, shared and saved.
//
// A net made here keeps every blob in its own memory and in the plain
// (N, C, H, W) layout, as Caffe's do: Python reads intermediate blobs after
// forward (net.blobs['conv1'].data), which the CPU engine's channel-blocked
// layouts and shared storage would otherwise leave in another form.
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>

#include "bindings.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace py = pybind11;

namespace xtrain::python {
namespace {

NetOptions python_net_options() {
  NetOptions options;
  options.device = current_device();
  options.verbose = false;
  options.share_activation_memory = false;
  options.channel_blocked_activations = false;
  if (has_random_seed()) options.random_seed = random_seed();
  options.precision = current_precision();
  return options;
}

std::shared_ptr<Net> make_net(const std::string& network_file, Phase phase, int level,
                              const std::vector<std::string>& stages,
                              const std::optional<std::string>& weights) {
  auto net = std::make_shared<Net>(network_file, phase, level, stages, python_net_options());
  if (weights) net->copy_trained_layers_from(*weights);
  return net;
}

// Refuses a pass from layer `start` to layer `end` that leaves the net or
// runs the wrong way (forward goes up, backward down).
void check_pass_range(const Net& net, const char* pass, int start, int end, bool upward) {
  const int layers = static_cast<int>(net.layers().size());
  const int lowest = upward ? start : end;
  const int highest = upward ? end : start;
  XTRAIN_CHECK(lowest >= 0 && highest < layers && lowest <= highest, pass, "(start=", start,
               ", end=", end, "): the net has layers 0..", layers - 1, " and ", pass,
               " runs from start ", upward ? "up" : "down", " to end");
}

// Forward through layers start..end; returns the loss they add up.
float forward_range(Net& net, int start, int end) {
  check_pass_range(net, "forward", start, end, /*upward=*/true);
  float loss = 0;
  for (int i = start; i <= end; ++i) {
    loss += net.layers()[i]->forward(net.bottom_vecs()[i], net.top_vecs()[i]);
  }
  return loss;
}

// Backward from layer start down to layer end (start >= end).
void backward_range(Net& net, int start, int end) {
  check_pass_range(net, "backward", start, end, /*upward=*/false);
  for (int i = start; i >= end; --i) {
    if (!net.layer_needs_backward(i)) continue;
    net.layers()[i]->backward(net.top_vecs()[i], net.bottom_need_backward()[i],
                              net.bottom_vecs()[i]);
  }
}

std::vector<int> blob_indices(const Net& net, const BlobVec& wanted) {
  std::vector<int> indices;
  for (const Blob* blob : wanted) {
    const auto& blobs = net.blobs();
    const auto found =
        std::find_if(blobs.begin(), blobs.end(),
                     [&](const std::shared_ptr<Blob>& b) { return b.get() == blob; });
    if (found != blobs.end()) indices.push_back(static_cast<int>(found - blobs.begin()));
  }
  return indices;
}

}  // namespace

void bind_net(py::module_& module) {
  module.def(
      "layer_type_list", [] { return LayerRegistry::global().types(); },
      "The layer types a prototxt can name, in name order.");

  py::enum_<Phase>(module, "Phase").value("TRAIN", TRAIN).value("TEST", TEST).export_values();
  // pycaffe scripts also pass the phase as a number (caffe_pb2.TEST).
  py::implicitly_convertible<int, Phase>();

  // dynamic_attr: the Python side caches its ordered dicts on the net.
  py::class_<Net, std::shared_ptr<Net>>(module, "Net", py::dynamic_attr(),
                                        "A net of layers built from a prototxt.")
      // Net(network_file, phase, level=0, stages=None, weights=None)
      .def(py::init([](const std::string& network_file, Phase phase, int level,
                       std::optional<std::vector<std::string>> stages,
                       std::optional<std::string> weights) {
             return make_net(network_file, phase, level,
                             stages.value_or(std::vector<std::string>{}), weights);
           }),
           py::arg("network_file"), py::arg("phase"), py::arg("level") = 0,
           py::arg("stages") = py::none(), py::arg("weights") = py::none())
      // Net(network_file, weights, phase): Caffe's older form.
      .def(py::init([](const std::string& network_file, const std::string& weights, Phase phase) {
             return make_net(network_file, phase, 0, {}, weights);
           }),
           py::arg("network_file"), py::arg("weights"), py::arg("phase"))
      .def_property_readonly("name", &Net::name)
      .def_property_readonly("phase", &Net::phase)
      .def_property_readonly("_blobs", [](const Net& net) { return net.blobs(); })
      .def_property_readonly("_blob_names", &Net::blob_names)
      .def_property_readonly("_layer_names", &Net::layer_names)
      .def_property_readonly("layers", [](const Net& net) { return net.layers(); })
      .def_property_readonly("_inputs",
                             [](const Net& net) { return blob_indices(net, net.input_blobs()); })
      .def_property_readonly("_outputs", &Net::output_blob_indices)
      .def("_top_ids", [](const Net& net, int layer) { return net.top_id_vecs().at(layer); })
      .def("_bottom_ids", [](const Net& net, int layer) { return net.bottom_id_vecs().at(layer); })
      .def("_forward", &forward_range, py::arg("start"), py::arg("end"),
           py::call_guard<py::gil_scoped_release>())
      .def("_backward", &backward_range, py::arg("start"), py::arg("end"),
           py::call_guard<py::gil_scoped_release>())
      .def("reshape", &Net::reshape, "Re-run every layer's reshape after input shapes changed.")
      .def("clear_param_diffs", &Net::clear_param_diffs)
      .def(
          "copy_from",
          [](Net& net, const std::string& weights) { net.copy_trained_layers_from(weights); },
          py::arg("weights"), "Copy the weights of layers named alike from a .caffemodel.")
      .def("share_with", &Net::share_trained_layers_with, py::arg("other"),
           "Use the weights of `other`'s layers named alike (no copy).")
      .def(
          "save",
          [](const Net& net, const std::string& path) {
            NetParameter param;
            net.to_proto(&param, /*write_diff=*/false);
            write_proto_to_binary_file(param, path);
          },
          py::arg("filename"), "Write the weights as a .caffemodel.")
      .def(
          "save_hdf5", [](const Net& net, const std::string& path) { net.to_hdf5(path); },
          py::arg("filename"), "Write the weights as a .caffemodel.h5 (Caffe's HDF5 layout).");
}

}  // namespace xtrain::python
