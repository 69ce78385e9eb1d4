// Hdf5DataLayer (type "HDF5Data"): batches of rows of HDF5 datasets.
//
// hdf5_data_param.source is a text file naming HDF5 files. As in Caffe the
// names are read as whitespace-separated words (so one per line, blank lines
// ignored, no spaces inside a path); a relative name is relative to the
// working directory, not to the list.
//
// Top k is read from the dataset named like top k (tops "data" and "label"
// read datasets "data" and "label"). In one file every such dataset has the
// same number N > 0 of rows (its first axis); row r of a dataset of dims
// (N, d1, ..., dm) is its d1 x ... x dm block at r. Float, double and integer
// datasets are all converted to float. Top k has shape (batch_size, d1, ...,
// dm), so a 1-d label dataset (N) gives a top of shape (batch_size); every
// file must agree on d1..dm, while N may differ between files.
//
// The rows of all files form one stream: the rows of the first file in
// order, then those of the next, wrapping around from the last file to the
// first. Item i of a batch is the next row of the stream, so a batch may end
// in one file and continue in the next. Only one file is in memory at a time
// (and with a single file it is read once).
//
// shuffle: the files are visited in a random order, redrawn each time the
// stream wraps around, and each time a file is entered its rows are visited
// in a fresh random order (with a single file: a fresh order on every pass).
// Every draw comes from the layer's random() stream. The first file is
// chosen and loaded on the first forward, so a seed given after setup counts.
//
// Data-parallel replica r of N (data_shard()) with batch B reads rows
// kNB + rB .. kNB + rB + B - 1 of that stream at its k-th forward (every
// replica draws the same shuffles), so N replicas read what one layer with
// batch N*B reads.
//
// transform_param is refused (as in Caffe: HDF5 data is generic). The layer
// has no bottoms and computes no gradient.
#pragma once

#include <string>
#include <vector>

#include "xtrain/layer.hpp"

namespace xtrain {

class Hdf5File;

class Hdf5DataLayer : public Layer {
 public:
  explicit Hdf5DataLayer(const LayerParameter& param) : Layer(param) {}

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override;
  void reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "HDF5Data"; }
  int exact_num_bottom_blobs() const override { return 0; }
  int min_top_blobs() const override { return 1; }

  // Exact resume: the file and row orders and the position in them.
  void save_resume_state(LayerResumeState* state) const override;
  void restore_resume_state(const LayerResumeState& state) override;

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

 private:
  void read_file_list();
  // The dims of each top's dataset in `file`, checked: the datasets exist,
  // have the same number (> 0) of rows, and (once the top shapes are known)
  // match them beyond the first axis.
  std::vector<std::vector<int>> checked_dataset_dims(const Hdf5File& file) const;
  // Makes files_[file_index] the current file, reading it unless it already
  // is in memory, and starts at its first row (in a fresh order if shuffling).
  void enter_file(int file_index);
  void read_file(int file_index);
  // Opens files_[file_index] and reads each top's dataset into (*rows)[k];
  // returns the file's number of rows.
  int read_datasets(int file_index, std::vector<std::vector<float>>* rows) const;
  // HDF5 trusts a file's metadata and can crash on a damaged one
  // (hdf5_crash_isolation.hpp): the first time a listed file is read, it is
  // read in a child process first.
  void survive_first_read(int file_index);
  // Called after the last row of the current file was used.
  void move_to_next_file();
  // Moves `rows` rows on in the stream without copying them (the other
  // data-parallel replicas' share of the global batch).
  void skip_rows(int rows);
  void shuffle(std::vector<int>* order);
  // "layer 'x' (HDF5Data), source 'list.txt'": the prefix of errors about files.
  std::string source_context() const;

  int batch_size_ = 0;
  bool shuffle_ = false;
  std::vector<std::string> files_;
  std::vector<bool> survived_;  // per file: read once in a child process without crashing
  std::vector<std::vector<int>> top_shapes_;  // (batch_size, d1, ..., dm) per top
  std::vector<std::size_t> row_sizes_;        // d1 * ... * dm per top

  bool started_ = false;
  std::vector<int> file_order_;                // indices into files_, in visiting order
  std::size_t file_position_ = 0;              // index into file_order_ of the current file
  int loaded_file_ = -1;                       // index into files_ of the rows in memory; -1: none
  std::vector<std::vector<float>> file_rows_;  // per top: the current file's dataset
  int num_rows_ = 0;
  std::vector<int> row_order_;    // with shuffle: the current file's rows, in visiting order
  int current_row_ = 0;           // position in the current file's visiting order
  std::vector<float*> top_data_;  // forward's destinations, kept to avoid allocating
};

}  // namespace xtrain
