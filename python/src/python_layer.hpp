// `type: "Python"` layers: a layer whose setup, reshape, forward and backward
// are the methods of a Python class (python_param { module layer param_str }),
// as in Caffe's WITH_PYTHON_LAYER builds.
//
// The class is looked up when the layer is set up (the module imported from
// sys.path, i.e. PYTHONPATH), instantiated with no arguments, and given the
// attributes pycaffe gives it: `param_str`, `phase` and `blobs` (this
// layer's parameter blobs: what the Python side adds with
// `self.blobs.add_blob(*shape)` the solver trains and snapshots save). Its
// methods get lists of xtrain.Blob; backward also gets `propagate_down`.
//
// Every call takes the GIL (the C++ side releases it while it computes), so
// a Python layer works in nets driven from Python and, through the embedding
// plugin (python/embed/), in the command-line tools. A Python exception
// becomes an xtrain::Error naming the layer, the class and the method, with
// the Python traceback.
#pragma once

#include <pybind11/pybind11.h>

#include "xtrain/layer.hpp"

namespace xtrain::python {

class PythonLayer : public Layer {
 public:
  explicit PythonLayer(const LayerParameter& param) : Layer(param) {}
  ~PythonLayer() override;

  const char* type() const override { return "Python"; }
  void layer_setup(const BlobVec& bottom, const BlobVec& top) override;
  void reshape(const BlobVec& bottom, const BlobVec& top) override;

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  // Calls self_.<method>(*arguments), turning a Python exception into an
  // xtrain::Error. The GIL must be held.
  void call(const char* method, const pybind11::tuple& arguments);
  std::string class_name() const;

  pybind11::object self_;
};

// Registers "Python" in LayerRegistry::global() (once), and binds the
// `blobs` list a Python layer adds its parameters to.
void bind_python_layer(pybind11::module_& module);

}  // namespace xtrain::python
