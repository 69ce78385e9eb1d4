// The shapes of the blobs imported so far, for the importers that need more
// than a value's rank (a Slice's bounds, a Shape node, the broadcast of a
// Mul between two values). ONNX files from torch.onnx.export carry no
// shapes of intermediate values, so they come from a Net built of the
// layers imported so far. Each value is written once (no layer works in
// place on an ONNX value), so a shape once known stays right: every blob's
// shape is kept, and a Net is built again only for a blob not yet seen;
// quietly, as the import's check of the pooling windows builds its own.
#include "interchange/onnx_node_import.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/net.hpp"

namespace xtrain::interchange {

QuietLayerSetUp::QuietLayerSetUp() : before_(min_log_severity_of_this_thread()) {
  if (before_ < LogSeverity::kWarning) set_min_log_severity_of_this_thread(LogSeverity::kWarning);
}

QuietLayerSetUp::~QuietLayerSetUp() { set_min_log_severity_of_this_thread(before_); }

std::vector<int> imported_blob_shape(ImportState& state, const std::string& blob) {
  auto known = state.blob_shapes.find(blob);
  if (known != state.blob_shapes.end()) return known->second;
  NetParameter param = state.net;
  param.mutable_state()->set_phase(TEST);
  NetOptions options;
  options.verbose = false;
  const QuietLayerSetUp quiet;
  const Net net(param, options);
  for (const std::string& name : net.blob_names()) {
    state.blob_shapes[name] = net.blob_by_name(name)->shape();
  }
  known = state.blob_shapes.find(blob);
  XTRAIN_CHECK(known != state.blob_shapes.end(), "value '", blob,
               "' is computed by no earlier node (a constant, or missing)");
  return known->second;
}

}  // namespace xtrain::interchange
