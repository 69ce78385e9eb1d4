// PYBIND11_MODULE for xtrain._xtrain; the bindings live in *_binding.cpp.
#include <pybind11/pybind11.h>

#include "bindings.hpp"
#include "python_layer.hpp"
#include "xtrain/error.hpp"

PYBIND11_MODULE(_xtrain, module) {
  module.doc() = "xtrain's C++ core (use the `xtrain` package, which wraps it as pycaffe does)";
  // An xtrain::Error reaches Python as its own exception type (a subclass of
  // RuntimeError, which is what pycaffe's callers catch).
  pybind11::register_exception<xtrain::Error>(module, "XtrainError", PyExc_RuntimeError);
  xtrain::python::bind_mode(module);
  xtrain::python::bind_blob(module);
  xtrain::python::bind_net(module);
  xtrain::python::bind_solver(module);
  xtrain::python::bind_python_layer(module);
}
