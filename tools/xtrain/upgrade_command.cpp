// xtrain upgrade: rewrite an old file in the current format, as Caffe's
// upgrade_net_proto_text / upgrade_net_proto_binary /
// upgrade_solver_proto_text did.
//
//   xtrain upgrade --model=OLD.prototxt --output=NEW.prototxt
//   xtrain upgrade --solver=OLD_solver.prototxt --output=NEW_solver.prototxt
//   xtrain upgrade --weights=OLD.caffemodel --output=NEW.caffemodel
//
// The input is never overwritten. A file already current is copied as is.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "command.hpp"
#include "flags.hpp"
#include "xtrain/error.hpp"
#include "xtrain/net_upgrade.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain::cli {
namespace {

bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  if (std::filesystem::equivalent(a, b, error)) return true;
  // `b` may not exist yet: compare the paths themselves.
  const auto resolved_a = std::filesystem::weakly_canonical(a, error);
  if (error) return false;
  const auto resolved_b = std::filesystem::weakly_canonical(b, error);
  return !error && resolved_a == resolved_b;
}

void report(const std::string& input, const std::string& output,
            const std::vector<std::string>& steps) {
  if (steps.empty()) {
    std::printf("'%s' is already in the current format; copied it to '%s'\n", input.c_str(),
                output.c_str());
    return;
  }
  std::printf("Upgraded '%s' to '%s':\n", input.c_str(), output.c_str());
  for (const std::string& step : steps) std::printf("  - %s\n", step.c_str());
}

}  // namespace

int upgrade_command() {
  const int inputs = static_cast<int>(!FLAGS_model.empty()) +
                     static_cast<int>(!FLAGS_solver.empty()) +
                     static_cast<int>(!FLAGS_weights.empty());
  XTRAIN_CHECK(inputs == 1,
               "xtrain upgrade needs exactly one of --model=OLD.prototxt, "
               "--solver=OLD_solver.prototxt or --weights=OLD.caffemodel (got ",
               inputs, "), and --output=NEW");
  const std::string& input = !FLAGS_model.empty()    ? FLAGS_model
                             : !FLAGS_solver.empty() ? FLAGS_solver
                                                     : FLAGS_weights;
  XTRAIN_CHECK(!FLAGS_output.empty(), "xtrain upgrade needs --output=NEW (where to write '", input,
               "' upgraded)");
  XTRAIN_CHECK(std::filesystem::exists(input), "cannot open '", input, "': no such file");
  XTRAIN_CHECK(!same_file(input, FLAGS_output), "--output='", FLAGS_output,
               "' is the input file; write the upgraded file elsewhere so the original is kept");

  std::vector<std::string> steps;
  if (!FLAGS_model.empty()) {
    NetParameter net;
    read_proto_from_text_file(input, &net);
    upgrade_net_as_needed(input, &net, &steps);
    write_proto_to_text_file(net, FLAGS_output);
  } else if (!FLAGS_solver.empty()) {
    SolverParameter solver;
    read_proto_from_text_file(input, &solver);
    upgrade_solver_as_needed(input, &solver, &steps);
    write_proto_to_text_file(solver, FLAGS_output);
  } else {
    NetParameter weights;
    read_proto_from_binary_file(input, &weights);
    upgrade_net_as_needed(input, &weights, &steps);
    write_proto_to_binary_file(weights, FLAGS_output);
  }
  report(input, FLAGS_output, steps);
  return 0;
}

}  // namespace xtrain::cli
