#include "inference/image_deploy_net.hpp"

#include <vector>

#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/weights_coverage.hpp"

namespace xtrain {

std::unique_ptr<Net> open_image_deploy_net(const std::string& deploy_prototxt, const Device& device,
                                           const char* user) {
  NetOptions net_options;
  net_options.device = device;
  net_options.verbose = false;
  auto net =
      std::make_unique<Net>(deploy_prototxt, TEST, 0, std::vector<std::string>{}, net_options);
  XTRAIN_CHECK(net->input_blobs().size() == 1, "net '", deploy_prototxt, "' has ",
               net->input_blobs().size(), " inputs; ", user,
               " needs exactly one: an Input layer with one top of shape N x C x H x W");
  const Blob& input = *net->input_blobs().front();
  XTRAIN_CHECK(input.num_axes() == 4, "net '", deploy_prototxt, "': its input has shape ",
               input.shape_string(), "; ", user, " needs N x C x H x W");
  return net;
}

void load_deploy_weights(Net& net, const std::string& weights, bool allow_missing_weights) {
  const std::vector<std::string> missing = copy_weights_reporting_missing(net, {weights});
  if (missing.empty()) return;
  const std::string what = describe_missing_weights(net, missing, {weights});
  XTRAIN_CHECK(allow_missing_weights, what,
               ": the weights do not belong to this net (layers are copied by name) or the "
               "file is cut short; give the right weights (or allow_missing_weights)");
  XLOG(WARNING) << what;
}

}  // namespace xtrain
