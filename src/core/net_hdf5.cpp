// Net::to_hdf5: the net's weights through the HDF5 snapshot writer.
#include "core/hdf5_snapshot.hpp"
#include "xtrain/net.hpp"

namespace xtrain {

void Net::to_hdf5(const std::string& path, bool write_diff) const {
  NetParameter weights;
  to_proto(&weights, write_diff);
  write_net_hdf5(weights, path, write_diff);
}

}  // namespace xtrain
