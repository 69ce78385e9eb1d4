#include "python_layer.hpp"

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

namespace py = pybind11;

namespace xtrain::python {
namespace {

// A layer's parameter blobs as the Python layer sees them (`self.blobs`):
// a list it can index, iterate and grow with add_blob(*shape).
struct LayerBlobs {
  std::vector<std::shared_ptr<Blob>>* blobs;
};

py::list blob_list(const BlobVec& blobs) {
  py::list list;
  for (Blob* blob : blobs) list.append(py::cast(blob, py::return_value_policy::reference));
  return list;
}

// "ValueError: ... (the traceback)" of the exception being handled.
std::string describe(py::error_already_set& error) {
  try {
    const py::object format = py::module_::import("traceback").attr("format_exception");
    std::string text;
    for (const py::handle& line : format(error.type(), error.value(), error.trace())) {
      text += line.cast<std::string>();
    }
    return text;
  } catch (const std::exception&) {
    return error.what();
  }
}

}  // namespace

PythonLayer::~PythonLayer() {
  if (!self_ || !Py_IsInitialized()) return;
  py::gil_scoped_acquire gil;
  self_.release().dec_ref();
}

std::string PythonLayer::class_name() const {
  const PythonParameter& python = param_.python_param();
  return python.module() + "." + python.layer();
}

void PythonLayer::call(const char* method, const py::tuple& arguments) {
  try {
    self_.attr(method)(*arguments);
  } catch (py::error_already_set& error) {
    throw Error(where() + ": the Python layer " + class_name() + " raised in " + method +
                "():\n" + describe(error));
  }
}

void PythonLayer::layer_setup(const BlobVec& bottom, const BlobVec& top) {
  const PythonParameter& python = param_.python_param();
  XTRAIN_CHECK(!python.module().empty() && !python.layer().empty(), where(),
               ": a Python layer needs python_param { module: '...' layer: '...' } (the module "
               "on PYTHONPATH and the class in it)");
  py::gil_scoped_acquire gil;
  py::object layer_class;
  try {
    layer_class = py::module_::import(python.module().c_str()).attr(python.layer().c_str());
  } catch (py::error_already_set& error) {
    throw Error(where() + ": cannot load the Python layer " + class_name() +
                " (is its module on PYTHONPATH?):\n" + describe(error));
  }
  try {
    self_ = layer_class();
    self_.attr("param_str") = python.param_str();
    self_.attr("phase") = phase();
    self_.attr("blobs") = LayerBlobs{&blobs()};
  } catch (py::error_already_set& error) {
    throw Error(where() + ": cannot make the Python layer " + class_name() + ":\n" +
                describe(error));
  }
  call("setup", py::make_tuple(blob_list(bottom), blob_list(top)));
}

void PythonLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  py::gil_scoped_acquire gil;
  call("reshape", py::make_tuple(blob_list(bottom), blob_list(top)));
}

void PythonLayer::forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  py::gil_scoped_acquire gil;
  call("forward", py::make_tuple(blob_list(bottom), blob_list(top)));
}

void PythonLayer::backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                               const BlobVec& bottom) {
  py::gil_scoped_acquire gil;
  py::list down;
  for (bool d : propagate_down) down.append(d);
  call("backward", py::make_tuple(blob_list(top), down, blob_list(bottom)));
}

void bind_python_layer(py::module_& module) {
  py::class_<LayerBlobs>(module, "LayerBlobs", "A Python layer's parameter blobs.")
      .def("__len__", [](const LayerBlobs& b) { return b.blobs->size(); })
      .def("__getitem__",
           [](const LayerBlobs& b, long index) {
             const long size = static_cast<long>(b.blobs->size());
             if (index < 0) index += size;
             if (index < 0 || index >= size) throw py::index_error("blob index out of range");
             return (*b.blobs)[static_cast<std::size_t>(index)];
           })
      .def("__iter__",
           [](const LayerBlobs& b) { return py::make_iterator(b.blobs->begin(), b.blobs->end()); },
           py::keep_alive<0, 1>())
      .def(
          "add_blob",
          [](LayerBlobs& b, const py::args& shape) {
            std::vector<int> dims;
            for (const py::handle& dim : shape) dims.push_back(dim.cast<int>());
            b.blobs->push_back(std::make_shared<Blob>(dims));
          },
          "add_blob(*shape): a new parameter blob of that shape (zeros).");

  LayerRegistry& registry = LayerRegistry::global();
  if (!registry.has("Python")) {
    registry.add("Python", [](const LayerParameter& param) -> std::unique_ptr<Layer> {
      return std::make_unique<PythonLayer>(param);
    });
  }
}

}  // namespace xtrain::python
