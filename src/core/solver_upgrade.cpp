// Solver upgrade: the solver_type enum becomes the type string, and nets
// written inside the solver get the net upgrade.
#include "core/net_upgrade.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {
namespace {

// `field` names the inline net, e.g. "net_param" or "test_net_param 1".
bool upgrade_inline_net(const std::string& source, const std::string& field, NetParameter* net,
                        std::vector<std::string>* steps) {
  std::vector<std::string> net_steps;
  const bool upgraded = upgrade_net_as_needed(source + " (" + field + ")", net, &net_steps);
  if (steps) {
    for (const std::string& step : net_steps) steps->push_back("in " + field + ": " + step);
  }
  return upgraded;
}

}  // namespace

std::string solver_type_name(SolverParameter::SolverType type) {
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
  XTRAIN_ASSERT(false, "unhandled SolverType ", static_cast<int>(type));
  return {};
}

bool solver_needs_type_upgrade(const SolverParameter& param) { return param.has_solver_type(); }

void upgrade_solver_type(const std::string& source, SolverParameter* param) {
  if (!param->has_solver_type()) return;
  const std::string type = solver_type_name(param->solver_type());
  XTRAIN_CHECK(!param->has_type(), "'", source,
               "' sets both solver_type: ", SolverParameter::SolverType_Name(param->solver_type()),
               " (the deprecated enum) and type: \"", param->type(),
               "\"; keep only the type field (solver_type ",
               SolverParameter::SolverType_Name(param->solver_type()), " is type: \"", type, "\")");
  param->set_type(type);
  param->clear_solver_type();
}

bool solver_needs_upgrade(const SolverParameter& param) {
  if (solver_needs_type_upgrade(param)) return true;
  if (param.has_net_param() && net_needs_upgrade(param.net_param())) return true;
  if (param.has_train_net_param() && net_needs_upgrade(param.train_net_param())) return true;
  for (const NetParameter& net : param.test_net_param()) {
    if (net_needs_upgrade(net)) return true;
  }
  return false;
}

bool upgrade_solver_as_needed(const std::string& source, SolverParameter* param,
                              std::vector<std::string>* steps) {
  bool upgraded = false;
  if (solver_needs_type_upgrade(*param)) {
    const std::string what =
        "uses the deprecated solver_type field (enum) instead of type (string)";
    upgrade_solver_type(source, param);
    XLOG(WARNING) << "'" << source << "' " << what
                  << "; upgrading (write the new format with `xtrain upgrade`)";
    if (steps) steps->push_back(what);
    upgraded = true;
  }
  if (param->has_net_param()) {
    upgraded |= upgrade_inline_net(source, "net_param", param->mutable_net_param(), steps);
  }
  if (param->has_train_net_param()) {
    upgraded |=
        upgrade_inline_net(source, "train_net_param", param->mutable_train_net_param(), steps);
  }
  for (int i = 0; i < param->test_net_param_size(); ++i) {
    upgraded |= upgrade_inline_net(source, "test_net_param " + std::to_string(i),
                                   param->mutable_test_net_param(i), steps);
  }
  return upgraded;
}

}  // namespace xtrain
