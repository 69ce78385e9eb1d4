// The solvers for Python: made from a solver prototxt (pycaffe's SGDSolver,
// AdamSolver, ... and get_solver), stepped, solved, snapshotted and
// restored with the C++ training loop itself (exact resume, metrics and
// snapshots as in `xtrain train`). The GIL is released while C++ trains,
// and taken again for a Python callback.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/solver.hpp"
#include "xtrain/tensorboard.hpp"
#include "xtrain/training_report.hpp"

namespace py = pybind11;

namespace xtrain::python {
namespace {

// Reads `solver_file` as `xtrain train` does; a non-empty `type` is the
// update rule to use; a non-empty `tensorboard` the directory of TensorBoard
// events (`xtrain train --tensorboard`).
std::shared_ptr<Solver> make_solver(const std::string& solver_file, const std::string& type,
                                    const std::optional<std::string>& tensorboard) {
  SolverParameter param = read_solver_params_from_text_file(solver_file);
  if (!type.empty()) {
    // As pycaffe's SGDSolver(file) and friends: the class decides the update
    // rule, whatever the file says (with a word if it says otherwise).
    const bool names_other = param.has_type() && param.type() != type;
    if (names_other) {
      XLOG(WARNING) << "solver file '" << solver_file << "' asks for type \"" << param.type()
                    << "\", but it was opened as " << type << "Solver, which decides; "
                    << "use get_solver() to take the file's type";
    }
    param.set_type(type);
    param.clear_solver_type();
  }
  fill_default_snapshot_prefix(&param, solver_file);
  SolverOptions options;
  options.device = current_device();
  options.verbose_nets = false;
  options.channel_blocked_activations = false;  // every blob readable from Python
  options.precision = current_precision();
  if (has_random_seed()) param.set_random_seed(static_cast<std::int64_t>(random_seed()));
  std::shared_ptr<Solver> solver(create_solver(param, options));
  // The metrics file and report of `xtrain train`, where it puts them.
  solver->add_observer(make_training_recorder(param.snapshot_prefix() + "_metrics.jsonl",
                                              param.snapshot_prefix() + "_report.html"));
  if (tensorboard && !tensorboard->empty()) {
    solver->add_observer(make_tensorboard_recorder(*tensorboard, *solver));
  }
  // Ctrl-C (or any signal Python handles) while C++ trains: Python only runs
  // its handler when the GIL is taken, so the loop asks once an iteration.
  // A raised exception (KeyboardInterrupt) stops training after the
  // iteration, and step()/solve() raise it once they return.
  // An exception a Python callback or observer left set stops it too.
  solver->set_action_request_function([] {
    py::gil_scoped_acquire gil;
    return PyErr_Occurred() != nullptr || PyErr_CheckSignals() != 0 ? Solver::Action::kStop
                                                                    : Solver::Action::kNone;
  });
  return solver;
}

// Runs `train` without the GIL, then raises what a signal handler raised
// meanwhile (see make_solver). Stopped by Ctrl-C (KeyboardInterrupt), the
// solver snapshots first, as `xtrain train` does on SIGINT: solve() has
// already (snapshot_after_train), step() does it here.
template <typename Train>
void train_releasing_the_gil(Solver& solver, Train&& train) {
  {
    py::gil_scoped_release release;
    train();
  }
  if (PyErr_Occurred() == nullptr) return;
  py::error_already_set stopped;  // takes the exception out, to call Python again
  if (stopped.matches(PyExc_KeyboardInterrupt) && solver.param().snapshot_after_train() &&
      solver.last_snapshot_iter() != solver.iter()) {
    py::gil_scoped_release release;
    solver.snapshot();
  }
  throw stopped;
}

// Solver::apply_update is protected: the library's training loop calls it.
// pycaffe exposed Caffe's ApplyUpdate for loops written in Python (forward,
// backward, edit the gradients, update), so the binding reaches it through
// a derived class that only makes it public (never instantiated).
struct SolverUpdateAccess : Solver {
  using Solver::apply_update;
};

}  // namespace

void bind_solver(py::module_& module) {
  py::class_<Solver, std::shared_ptr<Solver>>(module, "Solver", py::dynamic_attr(),
                                              "Trains a net as a solver prototxt describes.")
      .def_property_readonly("net", py::overload_cast<>(&Solver::net),
                             py::return_value_policy::reference_internal)
      .def_property_readonly("test_nets", &Solver::test_nets)
      .def_property_readonly("iter", &Solver::iter)
      .def_property_readonly("max_iter",
                             [](const Solver& solver) { return solver.param().max_iter(); })
      .def_property_readonly("last_snapshot_paths", &Solver::last_snapshot_paths,
                             "The .caffemodel and .solverstate the last snapshot wrote.")
      .def_property_readonly("last_snapshot_iter", &Solver::last_snapshot_iter,
                             "The iteration of the last snapshot written or restored (-1: none).")
      .def_property_readonly("loss_scale", &Solver::loss_scale,
                             "The loss scale the next backward pass uses (1: none).")
      .def_property_readonly("skipped_updates", &Solver::skipped_updates,
                             "Updates adaptive loss scaling skipped for overflowed gradients.")
      .def_property_readonly("type",
                             [](const Solver& solver) { return std::string(solver.type()); })
      .def(
          "step",
          [](Solver& solver, int iters) {
            train_releasing_the_gil(solver, [&] { solver.step(iters); });
          },
          py::arg("iters"), "Train `iters` iterations.")
      .def(
          "solve",
          [](Solver& solver, const std::optional<std::string>& resume_file) {
            train_releasing_the_gil(solver, [&] { solver.solve(resume_file.value_or("")); });
          },
          py::arg("resume_file") = py::none(),
          "Train to max_iter (resuming from a .solverstate if given), snapshot and test.")
      .def(
          "snapshot", [](Solver& solver) { return solver.snapshot(); },
          py::call_guard<py::gil_scoped_release>(),
          "Write the .caffemodel and .solverstate of this iteration; returns their paths.")
      .def("apply_update", &SolverUpdateAccess::apply_update,
           py::call_guard<py::gil_scoped_release>(),
           "Apply the update rule to the gradients in the params' diffs, at this iteration's "
           "learning rate (as one training step ends, without advancing `iter`).")
      .def("restore", &Solver::restore, py::arg("filename"),
           py::call_guard<py::gil_scoped_release>(),
           "Resume from a .solverstate: weights, iteration, history, data positions.")
      .def(
          "add_gradients_ready_callback",
          [](Solver& solver, const py::function& callback) {
            solver.add_gradients_ready_callback([callback](Solver&) {
              py::gil_scoped_acquire acquire;
              callback();
            });
          },
          py::arg("callback"),
          "Call `callback()` each iteration once the gradients are ready, before the update.")
      .def(
          "add_callback",
          [](Solver& solver, const py::function& on_start, const py::function& on_gradients_ready) {
            // The C++ loop runs without the GIL (step releases it): each
            // call into Python takes it back.
            solver.add_iteration_start_callback([on_start](Solver&) {
              py::gil_scoped_acquire acquire;
              on_start();
            });
            solver.add_gradients_ready_callback([on_gradients_ready](Solver&) {
              py::gil_scoped_acquire acquire;
              on_gradients_ready();
            });
          },
          py::arg("on_start"), py::arg("on_gradients_ready"),
          "pycaffe's add_callback: `on_start()` at the start of each iteration, before its "
          "forward pass; `on_gradients_ready()` once its gradients are ready, before the update.")
      .def("add_observer", &add_python_observer, py::arg("callback"),
           "Call `callback(kind, event)` as training goes: kind 'start' and 'end' (solve() only), "
           "'iteration' (each iteration, before its forward pass), 'display', 'test', "
           "'snapshot'; event a dict (iteration, loss, outputs, paths, ...). A callback that "
           "raises stops training after the iteration, and step()/solve() raise it.")
      .def(
          "add_tensorboard",
          [](Solver& solver, const std::string& directory) {
            solver.add_observer(make_tensorboard_recorder(directory, solver));
          },
          py::arg("directory"),
          "Write TensorBoard event files into `directory` from now on (as `xtrain train "
          "--tensorboard`); `tensorboard --logdir directory` shows them.");

  for (const std::string& type : solver_types()) {
    module.def(
        (type + "Solver").c_str(),
        [type](const std::string& solver_file, const std::optional<std::string>& tensorboard) {
          return make_solver(solver_file, type, tensorboard);
        },
        py::arg("solver_file"), py::arg("tensorboard") = py::none(),
        ("A " + type +
         " solver from a solver prototxt (tensorboard: a directory for "
         "TensorBoard event files).")
            .c_str());
  }
  module.def(
      "get_solver",
      [](const std::string& solver_file, const std::optional<std::string>& tensorboard) {
        return make_solver(solver_file, "", tensorboard);
      },
      py::arg("solver_file"), py::arg("tensorboard") = py::none(),
      "The solver the file's `type` names (SGD if none); tensorboard: a directory for "
      "TensorBoard event files.");
  module.def("solver_types", &solver_types);
}

}  // namespace xtrain::python
