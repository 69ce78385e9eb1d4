// HDF5Output (hdf5_output_param.file_name; bottoms: data, label; no tops):
// writes a forward pass's two bottoms to an HDF5 file, as Caffe's does:
//   - at setup the file is created, truncating any file of that name;
//   - forward writes the datasets "data" and "label" in its root group,
//     32-bit floats shaped as Caffe's legacy 4-d blobs (num, channels,
//     height, width: missing axes are 1; more than 4 axes is an error);
//     the two bottoms must have the same num.
// Caffe writes the datasets under fixed names, so its second forward fails
// (the datasets exist) and aborts; here it is an xtrain::Error saying so,
// and the file keeps the first pass's batch. Backward does nothing.
// The bottoms are read on the host on either device.
#include <hdf5.h>

#include <string>
#include <vector>

#include "core/hdf5_handle.hpp"
#include "layers/builtin_layers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

class Hdf5OutputLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "HDF5Output"; }
  int exact_num_bottom_blobs() const override { return 2; }
  int exact_num_top_blobs() const override { return 0; }
  bool allow_force_backward(int) const override { return false; }

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override {
    (void)bottom;
    (void)top;
    file_name_ = param_.hdf5_output_param().file_name();
    XTRAIN_CHECK(!file_name_.empty(), where(),
                 " needs hdf5_output_param { file_name: \"...\" }: the HDF5 file to write");
    const QuietHdf5Errors quiet;
    Hdf5Handle file(H5Fcreate(file_name_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                    H5Fclose);
    XTRAIN_CHECK(file.valid(), where(), ": cannot create the HDF5 file '", file_name_, "'",
                 hdf5_reason(), "; check that its folder exists and is writable");
    XTRAIN_CHECK(file.close(), where(), ": cannot write the HDF5 file '", file_name_, "'",
                 hdf5_reason());
    written_ = false;
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    (void)top;
    for (int b = 0; b < 2; ++b) {
      XTRAIN_CHECK(bottom[b]->num_axes() <= 4, where(), ": bottom ", b, " has shape ",
                   bottom[b]->shape_string(),
                   "; Caffe's HDF5 output writes blobs of at most 4 axes (num, channels, height, "
                   "width); reshape it");
    }
    XTRAIN_CHECK(legacy_dims(*bottom[0])[0] == legacy_dims(*bottom[1])[0], where(), ": the data ",
                 bottom[0]->shape_string(), " and the label ", bottom[1]->shape_string(),
                 " must have the same batch size (first axis)");
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    (void)top;
    XTRAIN_CHECK(!written_, where(), " already wrote its batch to '", file_name_,
                 "': like Caffe's, it writes the datasets 'data' and 'label' once per file "
                 "(Caffe aborts on the second forward); run the net for one batch");
    const QuietHdf5Errors quiet;
    Hdf5Handle file(H5Fopen(file_name_.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
    XTRAIN_CHECK(file.valid(), where(), ": cannot open the HDF5 file '", file_name_,
                 "' it created at setup", hdf5_reason());
    write_dataset(file.get(), "data", *bottom[0]);
    write_dataset(file.get(), "label", *bottom[1]);
    XTRAIN_CHECK(file.close(), where(), ": cannot write the HDF5 file '", file_name_, "'",
                 hdf5_reason(), "; is the disk full?");
    written_ = true;
  }

  void backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

 private:
  // Caffe's legacy (num, channels, height, width): axes past the last are 1.
  static std::vector<hsize_t> legacy_dims(const Blob& blob) {
    std::vector<hsize_t> dims(4, 1);
    for (int axis = 0; axis < blob.num_axes() && axis < 4; ++axis) dims[axis] = blob.shape(axis);
    return dims;
  }

  void write_dataset(hid_t file, const char* name, const Blob& blob) const {
    const std::vector<hsize_t> dims = legacy_dims(blob);
    Hdf5Handle space(H5Screate_simple(4, dims.data(), nullptr), H5Sclose);
    Hdf5Handle dataset(space.valid() ? H5Dcreate2(file, name, H5T_NATIVE_FLOAT, space.get(),
                                                  H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
                                     : -1,
                       H5Dclose);
    XTRAIN_CHECK(dataset.valid(), where(), ": cannot create the dataset '", name, "' in '",
                 file_name_, "'", hdf5_reason());
    XTRAIN_CHECK(blob.count() == 0 || H5Dwrite(dataset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL,
                                               H5P_DEFAULT, blob.cpu_data()) >= 0,
                 where(), ": cannot write the dataset '", name, "' to '", file_name_, "'",
                 hdf5_reason());
  }

  std::string file_name_;
  bool written_ = false;
};

}  // namespace

void register_hdf5_output_layer(LayerRegistry& registry) {
  add_layer<Hdf5OutputLayer>(registry, "HDF5Output");
}

}  // namespace xtrain
