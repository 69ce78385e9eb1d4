#include "core/weights_file.hpp"

#include "core/hdf5_snapshot.hpp"
#include "core/net_upgrade.hpp"
#include "core/snapshot_checksum.hpp"
#include "core/truncated_message.hpp"
#include "xtrain/error.hpp"
#include "xtrain/input_file.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {

NetParameter read_weights_file(const std::string& path) {
  check_input_file(path, "the weights");
  if (looks_like_hdf5(path)) return read_net_hdf5(path);
  const std::string bytes = read_input_file(path, "the weights");
  // A snapshot's weights were checked against their state already. Here the
  // file may have been edited on purpose since (net surgery with Caffe's
  // schema keeps our trailer as an unknown field, now stale), so a mismatch
  // is worth a warning, not a refusal.
  if (check_checksum_trailer(bytes) == ChecksumStatus::kMismatch) {
    XLOG(WARNING) << "'" << path
                  << "' was changed after xtrain wrote it (edited by another tool?) or is "
                     "damaged: its checksum does not match; loading it anyway";
  }
  NetParameter net;
  if (!net.ParseFromString(bytes)) {
    XTRAIN_CHECK(!looks_cut_short(bytes, *NetParameter::descriptor()), "'", path,
                 "' is a .caffemodel cut short (", bytes.size(),
                 " bytes, ending inside a field): an interrupted write or an incomplete copy; "
                 "copy it again, or use an earlier snapshot");
    throw Error("'" + path + "' is not a valid .caffemodel (corrupt, or another kind of file)");
  }
  upgrade_net_as_needed(path, &net);  // V0/V1 .caffemodel files
  XTRAIN_CHECK(net.layer_size() > 0, "'", path,
               "' holds no layers, so it is not a .caffemodel with weights (is it a "
               ".solverstate? resume from those with --snapshot)");
  return net;
}

}  // namespace xtrain
