// The pieces of the `xtrain._xtrain` extension module, one file each: the
// run mode (CPU/GPU, device, seed), Blob, Layer and Net, the solvers. The
// Python package (python/xtrain/) adds pycaffe's conveniences on top.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>

#include "xtrain/device.hpp"
#include "xtrain/precision.hpp"
#include "xtrain/solver.hpp"

namespace xtrain::python {

void bind_mode(pybind11::module_& module);
void bind_blob(pybind11::module_& module);
void bind_net(pybind11::module_& module);
void bind_solver(pybind11::module_& module);

// solver.add_observer(callback): training_observer_binding.cpp.
void add_python_observer(Solver& solver, const pybind11::function& callback);

// What set_mode_cpu/set_mode_gpu/set_device chose: the device of every net
// and solver made from Python afterwards (pycaffe's global mode).
Device current_device();
// set_random_seed's seed, if one was set.
bool has_random_seed();
std::uint64_t random_seed();
// set_precision's precision for the nets and solvers made afterwards
// (unset: their fields decide).
std::optional<NumberType> current_precision();

}  // namespace xtrain::python
