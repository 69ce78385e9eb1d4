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
#include "xtrain/training_report.hpp"

namespace py = pybind11;

namespace xtrain::python {
namespace {

// Reads `solver_file` as `xtrain train` does; a non-empty `type` is the
// update rule to use.
std::shared_ptr<Solver> make_solver(const std::string& solver_file, const std::string& type) {
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
  // Ctrl-C (or any signal Python handles) while C++ trains: Python only runs
  // its handler when the GIL is taken, so the loop asks once an iteration.
  // A raised exception (KeyboardInterrupt) stops training after the
  // iteration, and step()/solve() raise it once they return.
  solver->set_action_request_function([] {
    py::gil_scoped_acquire gil;
    return PyErr_CheckSignals() != 0 ? Solver::Action::kStop : Solver::Action::kNone;
  });
  return solver;
}

// Runs `train` without the GIL, then raises what a signal handler raised
// meanwhile (see make_solver).
template <typename Train>
void train_releasing_the_gil(Train&& train) {
  {
    py::gil_scoped_release release;
    train();
  }
  if (PyErr_Occurred() != nullptr) throw py::error_already_set();
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
  py::class_<Solver, std::shared_ptr<Solver>>(module, "Solver",
                                              "Trains a net as a solver prototxt describes.")
      .def_property_readonly("net", py::overload_cast<>(&Solver::net),
                             py::return_value_policy::reference_internal)
      .def_property_readonly("test_nets", &Solver::test_nets)
      .def_property_readonly("iter", &Solver::iter)
      .def_property_readonly("loss_scale", &Solver::loss_scale,
                             "The loss scale the next backward pass uses (1: none).")
      .def_property_readonly("skipped_updates", &Solver::skipped_updates,
                             "Updates adaptive loss scaling skipped for overflowed gradients.")
      .def_property_readonly("type",
                             [](const Solver& solver) { return std::string(solver.type()); })
      .def(
          "step",
          [](Solver& solver, int iters) { train_releasing_the_gil([&] { solver.step(iters); }); },
          py::arg("iters"), "Train `iters` iterations.")
      .def(
          "solve",
          [](Solver& solver, const std::optional<std::string>& resume_file) {
            train_releasing_the_gil([&] { solver.solve(resume_file.value_or("")); });
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
          "forward pass; `on_gradients_ready()` once its gradients are ready, before the update.");

  for (const std::string& type : solver_types()) {
    module.def((type + "Solver").c_str(),
               [type](const std::string& solver_file) { return make_solver(solver_file, type); },
               py::arg("solver_file"), ("A " + type + " solver from a solver prototxt.").c_str());
  }
  module.def(
      "get_solver", [](const std::string& solver_file) { return make_solver(solver_file, ""); },
      py::arg("solver_file"), "The solver the file's `type` names (SGD if none).");
  module.def("solver_types", &solver_types);
}

}  // namespace xtrain::python
