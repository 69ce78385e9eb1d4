// Solver types by name. The legacy solver_type enum maps to the names Caffe
// gives them; the types Caffe has but xtrain does not yet are named as such.
#include <algorithm>

#include "solvers/sgd_solver.hpp"
#include "xtrain/error.hpp"
#include "xtrain/solver.hpp"

namespace xtrain {
namespace {

std::string legacy_type_name(SolverParameter::SolverType type) {
  switch (type) {
    case SolverParameter::SGD:
      return "SGD";
    case SolverParameter::NESTEROV:
      return "Nesterov";
    case SolverParameter::ADAGRAD:
      return "AdaGrad";
    case SolverParameter::RMSPROP:
      return "RMSProp";
    case SolverParameter::ADADELTA:
      return "AdaDelta";
    case SolverParameter::ADAM:
      return "Adam";
  }
  return "SGD";
}

std::string joined(const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
  return list;
}

}  // namespace

std::vector<std::string> solver_types() { return {"SGD"}; }

std::unique_ptr<Solver> create_solver(const SolverParameter& param, const SolverOptions& options) {
  std::string type = param.type();
  if (param.has_solver_type()) {
    XTRAIN_CHECK(!param.has_type(),
                 "the solver sets both solver_type (the old enum) and type; "
                 "keep only `type: \"",
                 param.type(), "\"`");
    type = legacy_type_name(param.solver_type());
  }
  if (type == "SGD") return std::make_unique<SGDSolver>(param, options);

  static const std::vector<std::string> caffe_types = {"Nesterov", "AdaGrad", "RMSProp", "AdaDelta",
                                                       "Adam"};
  if (std::find(caffe_types.begin(), caffe_types.end(), type) != caffe_types.end()) {
    throw Error("solver type '" + type +
                "' is not available yet (known: " + joined(solver_types()) + ")");
  }
  throw Error("unknown solver type '" + type + "' (known: " + joined(solver_types()) + ")");
}

}  // namespace xtrain
