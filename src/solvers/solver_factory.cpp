// Solver types by name. The legacy solver_type enum maps to the names Caffe
// gives them; setting both the enum and the name is an error, as in Caffe.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/net_upgrade.hpp"
#include "solvers/sgd_solver.hpp"
#include "solvers/update_rule_solvers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/solver.hpp"

namespace xtrain {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
  return list;
}

using SolverMaker =
    std::function<std::unique_ptr<Solver>(const SolverParameter&, const SolverOptions&)>;

template <typename SolverClass>
SolverMaker maker() {
  return [](const SolverParameter& param, const SolverOptions& options) {
    return std::unique_ptr<Solver>(new SolverClass(param, options));
  };
}

// In Caffe's order of solver_type.
const std::vector<std::pair<std::string, SolverMaker>>& solver_makers() {
  static const std::vector<std::pair<std::string, SolverMaker>> makers = {
      {"SGD", maker<SGDSolver>()},           {"Nesterov", maker<NesterovSolver>()},
      {"AdaGrad", maker<AdaGradSolver>()},   {"RMSProp", maker<RMSPropSolver>()},
      {"AdaDelta", maker<AdaDeltaSolver>()}, {"Adam", maker<AdamSolver>()}};
  return makers;
}

}  // namespace

std::vector<std::string> solver_types() {
  std::vector<std::string> names;
  for (const auto& entry : solver_makers()) names.push_back(entry.first);
  return names;
}

std::unique_ptr<Solver> create_solver(const SolverParameter& param, const SolverOptions& options) {
  std::string type = param.type();
  if (param.has_solver_type()) {
    XTRAIN_CHECK(!param.has_type(),
                 "the solver sets both solver_type (the old enum) and type; "
                 "keep only `type: \"",
                 param.type(), "\"`");
    type = solver_type_name(param.solver_type());
  }
  for (const auto& [name, make] : solver_makers()) {
    if (name == type) return make(param, options);
  }
  throw Error("unknown solver type '" + type + "' (known: " + joined(solver_types()) + ")");
}

}  // namespace xtrain
