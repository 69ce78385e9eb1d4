#include "data/hdf5_data_layer.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <numeric>

#include "core/hdf5_crash_isolation.hpp"
#include "data/hdf5_file.hpp"
#include "layers/builtin_layers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {

namespace {

// Runs an Hdf5File operation, putting `context` in front of its errors.
template <typename Operation>
auto with_context(const std::string& context, Operation operation) {
  try {
    return operation();
  } catch (const Error& error) {
    throw Error(context + ": " + error.what());
  }
}

std::string join_names(const std::vector<std::string>& names) {
  if (names.empty()) return "it has no datasets";
  std::string text = "its datasets: ";
  for (std::size_t i = 0; i < names.size(); ++i) text += (i ? ", " : "") + names[i];
  return text;
}

// "3 x 4" for the dims after the first axis; "scalar" if there are none.
std::string row_shape_string(const std::vector<int>& dims) {
  if (dims.size() <= 1) return "scalar";
  std::string text;
  for (std::size_t i = 1; i < dims.size(); ++i)
    text += (i > 1 ? " x " : "") + std::to_string(dims[i]);
  return text;
}

}  // namespace

std::string Hdf5DataLayer::source_context() const {
  return where() + ", source '" + param_.hdf5_data_param().source() + "'";
}

void Hdf5DataLayer::read_file_list() {
  const std::string& source = param_.hdf5_data_param().source();
  XTRAIN_CHECK(!source.empty(), where(),
               ": hdf5_data_param.source is empty; give the path of a text file that lists "
               "HDF5 files, one per line");
  std::ifstream list(source);
  XTRAIN_CHECK(list.is_open(), where(), ": cannot open hdf5_data_param.source '", source,
               "'; it must be a text file listing HDF5 files, one per line");
  files_.clear();
  std::string name;
  while (list >> name) files_.push_back(name);
  survived_.assign(files_.size(), false);
  XTRAIN_CHECK(!files_.empty(), where(), ": hdf5_data_param.source '", source,
               "' lists no HDF5 files; write one HDF5 file path per line");
}

void Hdf5DataLayer::layer_setup(const BlobVec&, const BlobVec& top) {
  const HDF5DataParameter& hdf5 = param_.hdf5_data_param();
  XTRAIN_CHECK(!param_.has_transform_param(), where(),
               ": HDF5Data does not transform data (as in Caffe); remove transform_param and "
               "store the data already transformed");
  XTRAIN_CHECK(hdf5.batch_size() > 0, where(), ": hdf5_data_param.batch_size must be positive");
  batch_size_ = static_cast<int>(hdf5.batch_size());
  shuffle_ = hdf5.shuffle();
  read_file_list();
  XLOG(INFO) << where() << ": " << files_.size() << " HDF5 file(s) listed in " << hdf5.source();

  // The tops' shapes come from the first listed file; the others must agree.
  survive_first_read(0);
  const Hdf5File first = with_context(source_context(), [&] { return Hdf5File(files_[0]); });
  const std::vector<std::vector<int>> dims = checked_dataset_dims(first);
  top_shapes_ = dims;
  row_sizes_.clear();
  for (std::vector<int>& shape : top_shapes_) {
    shape[0] = batch_size_;
    row_sizes_.push_back(std::accumulate(shape.begin() + 1, shape.end(), std::size_t{1},
                                         std::multiplies<std::size_t>()));
  }
  file_rows_.assign(top.size(), {});
  top_data_.assign(top.size(), nullptr);
  file_order_.resize(files_.size());
  std::iota(file_order_.begin(), file_order_.end(), 0);
  started_ = false;
  loaded_file_ = -1;
  reshape({}, top);
}

void Hdf5DataLayer::reshape(const BlobVec&, const BlobVec& top) {
  for (std::size_t k = 0; k < top.size(); ++k) top[k]->reshape(top_shapes_[k]);
}

std::vector<std::vector<int>> Hdf5DataLayer::checked_dataset_dims(const Hdf5File& file) const {
  const std::string context = source_context();
  const std::string& path = file.path();
  std::vector<std::vector<int>> dims(param_.top_size());
  for (int k = 0; k < param_.top_size(); ++k) {
    const std::string& name = param_.top(k);
    if (!file.has_dataset(name)) {
      const auto names = with_context(context, [&] { return file.dataset_names(); });
      throw Error(context + ": HDF5 file '" + path + "' has no dataset '" + name + "' for top '" +
                  name + "' (" + join_names(names) +
                  "); each top of an HDF5Data layer reads the dataset of the same name");
    }
    dims[k] = with_context(context, [&] { return file.dataset_dims(name); });
    XTRAIN_CHECK(dims[k][0] == dims[0][0], context, ": in HDF5 file '", path, "' dataset '", name,
                 "' has ", dims[k][0], " rows but dataset '", param_.top(0), "' has ", dims[0][0],
                 "; all datasets of a file must have the same number of rows (first axis)");
  }
  XTRAIN_CHECK(dims[0][0] > 0, context, ": in HDF5 file '", path, "' dataset '", param_.top(0),
               "' has 0 rows; remove the empty file from the list");
  if (!top_shapes_.empty()) {
    for (int k = 0; k < param_.top_size(); ++k) {
      const bool same = std::equal(dims[k].begin() + 1, dims[k].end(), top_shapes_[k].begin() + 1,
                                   top_shapes_[k].end());
      XTRAIN_CHECK(same, context, ": in HDF5 file '", path, "' the rows of dataset '",
                   param_.top(k), "' have shape ", row_shape_string(dims[k]), ", but in '",
                   files_[0], "' they have shape ", row_shape_string(top_shapes_[k]),
                   "; every file must have the same shape beyond the first axis");
    }
  }
  return dims;
}

void Hdf5DataLayer::read_file(int file_index) {
  // Forget the old rows first: if reading fails, a later forward retries.
  loaded_file_ = -1;
  num_rows_ = 0;
  survive_first_read(file_index);
  num_rows_ = read_datasets(file_index, &file_rows_);
  loaded_file_ = file_index;
}

int Hdf5DataLayer::read_datasets(int file_index, std::vector<std::vector<float>>* rows) const {
  const std::string context = source_context();
  const Hdf5File file = with_context(context, [&] { return Hdf5File(files_[file_index]); });
  const std::vector<std::vector<int>> dims = checked_dataset_dims(file);
  rows->resize(param_.top_size());
  for (int k = 0; k < param_.top_size(); ++k) {
    with_context(context, [&] { return file.read_floats(param_.top(k), &(*rows)[k]); });
  }
  return dims[0][0];
}

void Hdf5DataLayer::survive_first_read(int file_index) {
  if (survived_[file_index]) return;
  survive_hdf5_read(files_[file_index], source_context() + ": HDF5 file",
                    "write the file again, or remove it from the list", [&] {
                      std::vector<std::vector<float>> rows;
                      (void)read_datasets(file_index, &rows);
                    });
  survived_[file_index] = true;
}

void Hdf5DataLayer::shuffle(std::vector<int>* order) {
  // Fisher-Yates with our own stream, so the order is the same on every
  // standard library.
  for (std::size_t i = order->size(); i > 1; --i) {
    std::swap((*order)[i - 1], (*order)[random().below(static_cast<std::uint32_t>(i))]);
  }
}

void Hdf5DataLayer::enter_file(int file_index) {
  if (file_index != loaded_file_) read_file(file_index);
  current_row_ = 0;
  if (shuffle_) {
    row_order_.resize(num_rows_);
    std::iota(row_order_.begin(), row_order_.end(), 0);
    shuffle(&row_order_);
  }
}

void Hdf5DataLayer::move_to_next_file() {
  if (++file_position_ == file_order_.size()) {
    file_position_ = 0;
    if (shuffle_) shuffle(&file_order_);
  }
  enter_file(file_order_[file_position_]);
}

void Hdf5DataLayer::forward_cpu(const BlobVec&, const BlobVec& top) {
  if (!started_) {
    if (shuffle_) shuffle(&file_order_);
    file_position_ = 0;
    started_ = true;
  }
  if (loaded_file_ < 0) enter_file(file_order_[file_position_]);

  // A data-parallel replica r of N reads rows kNB + rB .. kNB + rB + B - 1 of
  // the rows' stream (files in order, shuffled alike on every replica): it
  // passes over the rows of the replicas before it, and after its batch over
  // those of the replicas after it, so that all stand at the next global batch.
  const DataShard shard = data_shard();
  skip_rows(shard.index * batch_size_);
  for (std::size_t k = 0; k < top.size(); ++k) top_data_[k] = top[k]->mutable_cpu_data();
  int item = 0;
  while (item < batch_size_) {
    // In order, the rest of the file (or of the batch) is one contiguous block.
    const int run = shuffle_ ? 1 : std::min(batch_size_ - item, num_rows_ - current_row_);
    const int row = shuffle_ ? row_order_[current_row_] : current_row_;
    for (std::size_t k = 0; k < top.size(); ++k) {
      // A dataset whose rows hold no values (shape N x 0) has an empty top,
      // whose data pointer is null: nothing to copy (memcpy must not see it).
      if (row_sizes_[k] == 0) continue;
      std::memcpy(top_data_[k] + item * row_sizes_[k], file_rows_[k].data() + row * row_sizes_[k],
                  run * row_sizes_[k] * sizeof(float));
    }
    item += run;
    current_row_ += run;
    if (current_row_ == num_rows_) move_to_next_file();
  }
  skip_rows((shard.count - 1 - shard.index) * batch_size_);
}

void Hdf5DataLayer::skip_rows(int rows) {
  while (rows > 0) {
    const int step = std::min(rows, num_rows_ - current_row_);
    rows -= step;
    current_row_ += step;
    if (current_row_ == num_rows_) move_to_next_file();
  }
}

void Hdf5DataLayer::save_resume_state(LayerResumeState* state) const {
  Layer::save_resume_state(state);
  if (!started_) return;
  for (int file : file_order_) state->add_file_order(file);
  state->set_file_position(static_cast<int>(file_position_));
  for (int row : row_order_) state->add_row_order(row);
  state->set_current_row(current_row_);
}

void Hdf5DataLayer::restore_resume_state(const LayerResumeState& state) {
  Layer::restore_resume_state(state);
  if (state.file_order_size() == 0) return;  // saved before the first forward
  XTRAIN_CHECK(state.file_order_size() == static_cast<int>(files_.size()) &&
                   state.file_position() >= 0 && state.file_position() < state.file_order_size(),
               where(), ": the snapshot was taken with ", state.file_order_size(),
               " HDF5 files in the list, but '", param_.hdf5_data_param().source(), "' now names ",
               files_.size(), "; resume with the same file list");
  file_order_.assign(state.file_order().begin(), state.file_order().end());
  for (int file : file_order_) {
    XTRAIN_CHECK(file >= 0 && file < static_cast<int>(files_.size()), where(),
                 ": corrupt resume state (file index ", file, ")");
  }
  file_position_ = static_cast<std::size_t>(state.file_position());
  read_file(file_order_[file_position_]);
  row_order_.assign(state.row_order().begin(), state.row_order().end());
  XTRAIN_CHECK(state.current_row() >= 0 && state.current_row() < num_rows_ &&
                   (!shuffle_ || static_cast<int>(row_order_.size()) == num_rows_),
               where(), ": the snapshot's position (row ", state.current_row(), " of ",
               row_order_.size(), ") does not fit '", files_[file_order_[file_position_]],
               "', which has ", num_rows_, " rows now; resume with the same files");
  current_row_ = state.current_row();
  started_ = true;
}

void register_hdf5_data_layer(LayerRegistry& registry) {
  add_layer<Hdf5DataLayer>(registry, "HDF5Data");
}

}  // namespace xtrain
