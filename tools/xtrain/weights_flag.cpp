// --weights for the commands that load trained weights (see command.hpp).
#include "command.hpp"
#include "flags.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/net.hpp"
#include "xtrain/weights_coverage.hpp"

namespace xtrain::cli {

void copy_weights(Net& net, const std::string& weights, bool scoring) {
  const std::vector<std::string> paths = split_commas(weights);
  if (paths.empty()) return;
  for (const std::string& path : paths) XLOG(INFO) << "Copying layers from " << path;
  const std::vector<std::string> missing = copy_weights_reporting_missing(net, paths);
  if (missing.empty()) return;
  const std::string what = describe_missing_weights(net, missing, paths);
  if (!scoring) {
    XLOG(WARNING) << what << " (expected for layers new to this net when fine-tuning)";
    return;
  }
  XTRAIN_CHECK(FLAGS_allow_missing_weights, what,
               ": the weights do not belong to this net (layers are copied by name) or the file "
               "is cut short; give the right weights, or --allow_missing_weights to run anyway");
  XLOG(WARNING) << what << " (--allow_missing_weights)";
}

}  // namespace xtrain::cli
