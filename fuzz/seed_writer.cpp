// seed_writer CORPUS_ROOT: writes the binary seeds that are easier to make
// with the library than to keep in git (scripts/fuzz.sh runs it once per
// build folder, and again after it is rebuilt): small images in each format OpenCV encodes, Datum
// records raw, float and encoded, IDX files plain and gzipped, mean files, LMDBs, HDF5Data files
// and ONNX models of small nets (xtrain export). Each goes to CORPUS_ROOT/<target>/<name>, the
// corpus of the target reading it.
#include <hdf5.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "xtrain/datum_io.hpp"
#include "xtrain/error.hpp"
#include "xtrain/image_codec.hpp"
#include "xtrain/image_datum.hpp"
#include "xtrain/lmdb_database.hpp"
#include "xtrain/onnx.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"

namespace fs = std::filesystem;

namespace {

fs::path root;

void write_seed(const std::string& target, const std::string& name, const std::string& bytes) {
  fs::create_directories(root / target);
  std::ofstream out(root / target / name, std::ios::binary | std::ios::trunc);
  out << bytes;
  XTRAIN_CHECK(out.good(), "cannot write the seed ", (root / target / name).string());
}

// A small picture with edges and a gradient, so lossy codecs keep structure.
xtrain::Image pattern(int channels, int height, int width) {
  xtrain::Image image{channels, height, width, {}};
  for (int c = 0; c < channels; ++c) {
    for (int h = 0; h < height; ++h) {
      for (int w = 0; w < width; ++w) {
        image.pixels.push_back(static_cast<std::uint8_t>((h * 40 + w * 25 + c * 70) % 256));
      }
    }
  }
  return image;
}

void append_big_endian(std::string* bytes, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) bytes->push_back(static_cast<char>(value >> shift));
}

std::string gzipped(const std::string& bytes) {
  const fs::path path = root / "gzip.tmp";
  gzFile file = gzopen(path.c_str(), "wb");
  XTRAIN_CHECK(file != nullptr, "cannot write ", path.string());
  gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(file);
  std::ifstream in(path, std::ios::binary);
  std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove(path);
  return out;
}

void write_images_and_datums() {
  const xtrain::Image colour = pattern(3, 6, 5);
  const xtrain::Image grey = pattern(1, 4, 7);
  for (const char* format : {"png", "jpg", "bmp", "tiff", "pgm", "ppm", "webp"}) {
    if (!xtrain::can_encode_as(format)) continue;
    const xtrain::Image& image = std::string(format) == "pgm" ? grey : colour;
    const std::string bytes = xtrain::encode_image(image, format);
    write_seed("image", std::string("pattern.") + format, bytes);
    if (std::string(format) == "png" || std::string(format) == "jpg") {
      xtrain::Datum encoded;
      encoded.set_data(bytes);
      encoded.set_encoded(true);
      encoded.set_label(4);
      write_seed("datum", std::string("encoded_") + format, encoded.SerializeAsString());
    }
  }
  write_seed("image", "grey.png", xtrain::encode_image(grey, "png"));
  write_seed("datum", "raw_colour", xtrain::image_to_datum(colour, 1).SerializeAsString());
  write_seed("datum", "raw_grey", xtrain::image_to_datum(grey, 2).SerializeAsString());
  xtrain::Datum floats;
  floats.set_channels(3);
  floats.set_height(2);
  floats.set_width(3);
  for (int i = 0; i < 18; ++i) floats.add_float_data(0.5f * i - 3);
  floats.set_label(9);
  write_seed("datum", "float", floats.SerializeAsString());
}

void write_idx_files() {
  std::string images;
  for (std::uint32_t value : {2051u, 2u, 3u, 4u}) append_big_endian(&images, value);
  for (int i = 0; i < 2 * 3 * 4; ++i) images.push_back(static_cast<char>(i * 10));
  std::string labels;
  for (std::uint32_t value : {2049u, 2u}) append_big_endian(&labels, value);
  labels += "\x07\x02";
  write_seed("idx", "images-idx3-ubyte", images);
  write_seed("idx", "labels-idx1-ubyte", labels);
  write_seed("idx", "images-idx3-ubyte.gz", gzipped(images));
  write_seed("idx", "labels-idx1-ubyte.gz", gzipped(labels));
}

void write_mean_files() {
  xtrain::BlobProto legacy;  // as Caffe's compute_image_mean writes it
  legacy.set_num(1);
  legacy.set_channels(3);
  legacy.set_height(4);
  legacy.set_width(5);
  for (int i = 0; i < 60; ++i) legacy.add_data(100.f + i);
  write_seed("mean_file", "legacy.binaryproto", legacy.SerializeAsString());
  xtrain::BlobProto shaped;
  for (int dim : {1, 1, 2, 2}) shaped.mutable_shape()->add_dim(dim);
  for (int i = 0; i < 4; ++i) shaped.add_data(0.25f * i);
  write_seed("mean_file", "shaped.binaryproto", shaped.SerializeAsString());
}

// LMDBs of Datum records (data.mdb only: the fuzz input): a single leaf, a
// tree with a branch page, records on overflow pages, and no records.
void write_lmdb_files() {
  struct Shape {
    const char* name;
    int records;
    int side;  // the Datum's image is 1 x side x side
  };
  for (const Shape& shape : {Shape{"one_leaf", 4, 8}, Shape{"branch_and_leaves", 60, 12},
                             Shape{"overflow_records", 3, 64}, Shape{"empty", 0, 1}}) {
    const fs::path directory = root / "lmdb.tmp";
    fs::remove_all(directory);
    {
      xtrain::LmdbWriter writer(xtrain::LmdbDatabase::open_for_writing(directory.string()));
      for (int i = 0; i < shape.records; ++i) {
        const xtrain::Image image = pattern(1, shape.side, shape.side);
        char key[16];
        std::snprintf(key, sizeof key, "%08d", i);
        writer.put(key, xtrain::image_to_datum(image, i % 10).SerializeAsString());
      }
      writer.commit();
    }
    std::ifstream in(directory / "data.mdb", std::ios::binary);
    write_seed("lmdb", shape.name,
               std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
    fs::remove_all(directory);
  }
}

// HDF5Data inputs: "data" and "label" datasets of a few rows, as float,
// as double and int, and chunked with gzip (HDF5's deflate filter).
void write_hdf5_data_file(const std::string& name, hid_t data_type, hid_t label_type,
                          bool compressed) {
  const fs::path path = root / "hdf5_data.tmp";
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  XTRAIN_CHECK(file >= 0, "cannot write ", path.string());
  const hsize_t data_dims[4] = {4, 1, 2, 3};
  const hsize_t label_dims[1] = {4};
  std::vector<double> values(4 * 1 * 2 * 3);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.25 * static_cast<double>(i);
  const double labels[4] = {0, 1, 2, 1};
  struct Dataset {
    const char* name;
    int rank;
    const hsize_t* dims;
    hid_t type;
    const double* values;
  };
  for (const Dataset& d : {Dataset{"data", 4, data_dims, data_type, values.data()},
                           Dataset{"label", 1, label_dims, label_type, labels}}) {
    const hid_t space = H5Screate_simple(d.rank, d.dims, nullptr);
    const hid_t create = H5Pcreate(H5P_DATASET_CREATE);
    if (compressed) {
      H5Pset_chunk(create, d.rank, d.dims);
      H5Pset_deflate(create, 6);
    }
    const hid_t set = H5Dcreate2(file, d.name, d.type, space, H5P_DEFAULT, create, H5P_DEFAULT);
    XTRAIN_CHECK(
        set >= 0 && H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, d.values) >= 0,
        "cannot write dataset ", d.name, " of ", path.string());
    H5Dclose(set);
    H5Pclose(create);
    H5Sclose(space);
  }
  H5Fclose(file);
  std::ifstream in(path, std::ios::binary);
  write_seed("hdf5_data", name,
             std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
  fs::remove(path);
}

void write_hdf5_data_files() {
  write_hdf5_data_file("float.h5", H5T_IEEE_F32LE, H5T_IEEE_F32LE, false);
  write_hdf5_data_file("double_and_int.h5", H5T_IEEE_F64LE, H5T_STD_I32LE, false);
  write_hdf5_data_file("gzip_chunks.h5", H5T_IEEE_F32LE, H5T_IEEE_F32LE, true);
}

// Small nets that cover the layers `xtrain export` writes (and so every
// pattern `xtrain import` reads back), exported with their fillers' weights
// on a 1x2x5x7 input: each model a few kilobytes.
void write_onnx_models() {
  const std::string input =
      "layer { name: 'data' type: 'Input' top: 'data' "
      "input_param { shape { dim: 1 dim: 2 dim: 5 dim: 7 } } }\n";
  const std::string filler = "weight_filler { type: 'gaussian' std: 0.3 } ";
  const std::pair<const char*, std::string> nets[] = {
      {"classifier",
       "layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv' convolution_param { "
       "num_output: 3 kernel_size: 3 pad: 1 " +
           filler +
           "} }"
           "layer { name: 'relu' type: 'ReLU' bottom: 'conv' top: 'conv' }"
           "layer { name: 'pool' type: 'Pooling' bottom: 'conv' top: 'pool' pooling_param { "
           "pool: AVE kernel_size: 3 stride: 2 pad: 1 } }"
           "layer { name: 'max' type: 'Pooling' bottom: 'pool' top: 'max' pooling_param { "
           "pool: MAX kernel_size: 2 stride: 2 } }"
           "layer { name: 'ip' type: 'InnerProduct' bottom: 'max' top: 'ip' inner_product_param { "
           "num_output: 4 " +
           filler +
           "} }"
           "layer { name: 'prob' type: 'Softmax' bottom: 'ip' top: 'prob' }"},
      {"normalizations",
       "layer { name: 'bn' type: 'BatchNorm' bottom: 'data' top: 'bn' }"
       "layer { name: 'scale' type: 'Scale' bottom: 'bn' top: 'bn' scale_param { bias_term: true "
       "} }"
       "layer { name: 'lrn' type: 'LRN' bottom: 'bn' top: 'lrn' lrn_param { local_size: 3 } }"
       "layer { name: 'within' type: 'LRN' bottom: 'lrn' top: 'within' lrn_param { local_size: 3 "
       "norm_region: WITHIN_CHANNEL } }"
       "layer { name: 'mvn' type: 'MVN' bottom: 'within' top: 'mvn' }"
       "layer { name: 'mean' type: 'MVN' bottom: 'mvn' top: 'mean' mvn_param { "
       "normalize_variance: false across_channels: true } }"},
      {"shapes",
       "layer { name: 'small' type: 'Pooling' bottom: 'data' top: 'small' pooling_param { "
       "pool: MAX kernel_size: 3 stride: 2 } }"
       "layer { name: 'crop' type: 'Crop' bottom: 'data' bottom: 'small' top: 'crop' crop_param "
       "{ axis: 2 offset: 1 } }"
       "layer { name: 'slice' type: 'Slice' bottom: 'crop' top: 'a' top: 'b' slice_param { "
       "axis: 1 slice_point: 1 } }"
       "layer { name: 'concat' type: 'Concat' bottom: 'b' bottom: 'a' top: 'concat' }"
       "layer { name: 'tile' type: 'Tile' bottom: 'concat' top: 'tile' tile_param { tiles: 2 } }"
       "layer { name: 'flat' type: 'Flatten' bottom: 'tile' top: 'flat' }"
       "layer { name: 'reshape' type: 'Reshape' bottom: 'flat' top: 'reshape' reshape_param { "
       "shape { dim: 0 dim: -1 dim: 3 } } }"
       "layer { name: 'sum' type: 'Reduction' bottom: 'reshape' top: 'sum' reduction_param { "
       "axis: 1 } }"},
      {"arithmetic",
       "layer { name: 'pooled' type: 'Pooling' bottom: 'data' top: 'pooled' pooling_param { "
       "pool: AVE global_pooling: true } }"
       "layer { name: 'factors' type: 'Flatten' bottom: 'pooled' top: 'factors' }"
       "layer { name: 'scale_by' type: 'Scale' bottom: 'data' bottom: 'factors' top: 'scale_by' "
       "scale_param { axis: 0 } }"
       "layer { name: 'power' type: 'Power' bottom: 'scale_by' top: 'power' power_param { "
       "power: 2 scale: 0.5 shift: 1 } }"
       "layer { name: 'eltwise' type: 'Eltwise' bottom: 'power' bottom: 'data' top: 'eltwise' "
       "eltwise_param { coeff: 0.5 coeff: -1 } }"
       "layer { name: 'threshold' type: 'Threshold' bottom: 'eltwise' top: 'threshold' }"
       "layer { name: 'prelu' type: 'PReLU' bottom: 'eltwise' top: 'prelu' }"
       "layer { name: 'argmax' type: 'ArgMax' bottom: 'prelu' top: 'argmax' argmax_param { "
       "top_k: 2 out_max_val: true } }"},
  };
  const fs::path onnx = root / "onnx_import.tmp.onnx";
  for (const auto& [name, layers] : nets) {
    xtrain::export_onnx(xtrain::read_net_params_from_text(input + layers, name), "", onnx.string(),
                        xtrain::OnnxExportOptions());
    std::ifstream in(onnx, std::ios::binary);
    write_seed("onnx_import", std::string(name) + ".onnx",
               std::string(std::istreambuf_iterator<char>(in), {}));
  }
  fs::remove(onnx);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: seed_writer CORPUS_ROOT\n");
    return 2;
  }
  root = argv[1];
  try {
    write_images_and_datums();
    write_idx_files();
    write_mean_files();
    write_lmdb_files();
    write_hdf5_data_files();
    write_onnx_models();
  } catch (const xtrain::Error& error) {
    std::fprintf(stderr, "seed_writer: %s\n", error.what());
    return 1;
  }
  return 0;
}
