// Blob and Layer for Python. A blob's `data` and `diff` are NumPy arrays
// that view the blob's host memory (no copy; a write goes straight into the
// net). The array keeps that memory alive, so an array still held after
// the blob was reshaped to a larger size reads the old values instead of
// freed memory, as a view of a reallocated buffer must.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/synced_memory.hpp"

namespace py = pybind11;

namespace xtrain::python {
namespace {

// A NumPy view of the blob's values (`diff`: its gradient) in host memory,
// C-ordered in the blob's shape. Fetching it brings the values to the host
// (from the GPU if they are newer there) and marks the host copy as the one
// to use next.
py::array_t<float> host_view(Blob& blob, bool diff) {
  const std::shared_ptr<SyncedMemory>& memory = diff ? blob.diff_memory() : blob.data_memory();
  float* values = diff ? blob.mutable_cpu_diff() : blob.mutable_cpu_data();
  std::vector<py::ssize_t> shape(blob.shape().begin(), blob.shape().end());
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t stride = sizeof(float);
  for (std::size_t axis = shape.size(); axis-- > 0;) {
    strides[axis] = stride;
    stride *= shape[axis];
  }
  if (values == nullptr || memory == nullptr) {
    return py::array_t<float>(shape, strides);  // an empty blob: nothing to view
  }
  auto* keep = new std::shared_ptr<SyncedMemory>(memory);
  const py::capsule owner(keep, [](void* pointer) {
    delete static_cast<std::shared_ptr<SyncedMemory>*>(pointer);
  });
  return py::array_t<float>(shape, strides, values, owner);
}

std::vector<int> shape_from_arguments(const py::args& args) {
  std::vector<int> shape;
  for (const py::handle& dim : args) shape.push_back(dim.cast<int>());
  return shape;
}

}  // namespace

void bind_blob(py::module_& module) {
  py::class_<Blob, std::shared_ptr<Blob>>(module, "Blob",
                                          "An N-d array of values and their gradients.")
      .def(py::init<>())
      .def(py::init<const std::vector<int>&>(), py::arg("shape"))
      .def_property_readonly(
          "shape", [](const Blob& blob) { return py::tuple(py::cast(blob.shape())); })
      .def_property_readonly("count", [](const Blob& blob) { return blob.count(); })
      .def_property_readonly("num", &Blob::num)
      .def_property_readonly("channels", &Blob::channels)
      .def_property_readonly("height", &Blob::height)
      .def_property_readonly("width", &Blob::width)
      .def_property_readonly("data", [](Blob& blob) { return host_view(blob, false); })
      .def_property_readonly("diff", [](Blob& blob) { return host_view(blob, true); })
      .def(
          "reshape",
          [](Blob& blob, const py::args& args) { blob.reshape(shape_from_arguments(args)); },
          "reshape(*dims): give the blob a new shape (its values are then undefined).");

  py::class_<Layer, std::shared_ptr<Layer>>(module, "Layer", "One layer of a Net.")
      .def_property_readonly("type", [](const Layer& layer) { return std::string(layer.type()); })
      .def_property_readonly("name", [](const Layer& layer) { return layer.name(); })
      .def_property_readonly("blobs", [](Layer& layer) { return layer.blobs(); },
                             "The layer's parameter blobs (weights, bias, ...).");
}

}  // namespace xtrain::python
