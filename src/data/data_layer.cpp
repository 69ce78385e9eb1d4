#include "data/data_layer.hpp"

#include <algorithm>
#include <cstring>

#include "layers/builtin_layers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {

DataLayer::~DataLayer() { stop_prefetching(); }

void DataLayer::check_parameters() const {
  const DataParameter& data = param_.data_param();
  XTRAIN_CHECK(data.backend() == DataParameter::LMDB, where(),
               ": LevelDB is not supported; convert the DB to LMDB and set "
               "data_param { backend: LMDB } (the default backend is LEVELDB, as in Caffe)");
  XTRAIN_CHECK(!data.source().empty(), where(),
               ": data_param.source is empty; give the path of an LMDB directory");
  XTRAIN_CHECK(data.batch_size() > 0, where(), ": data_param.batch_size must be positive");
  XTRAIN_CHECK(data.prefetch() > 0, where(), ": data_param.prefetch must be at least 1");
  // Caffe moves these into transform_param only when upgrading V1 nets; in a
  // current net it ignores them, and so do we, but not silently.
  if (data.has_scale() || data.has_mean_file() || data.has_crop_size() || data.has_mirror()) {
    XLOG(WARNING) << where()
                  << ": data_param.scale/mean_file/crop_size/mirror are deprecated and ignored "
                     "(as in Caffe); move them to transform_param";
  }
}

void DataLayer::layer_setup(const BlobVec&, const BlobVec& top) {
  check_parameters();
  const DataParameter& data = param_.data_param();
  batch_size_ = static_cast<int>(data.batch_size());
  output_labels_ = top.size() > 1;

  try {
    database_ = LmdbDatabase::open_for_reading(data.source());
  } catch (const Error& error) {
    throw Error(where() + ": " + error.what());
  }
  XTRAIN_CHECK(database_->num_records() > 0, where(), ": LMDB '", data.source(),
               "' is empty (0 records); fill it with convert_mnist_data or convert_imageset");
  XLOG(INFO) << "Opened lmdb " << data.source();
  cursor_ = std::make_unique<LmdbCursor>(database_);

  try {
    parse_datum(cursor_->value(), cursor_->key(), data.source(), &datum_);
  } catch (const Error& error) {
    throw Error(where() + ": " + error.what());
  }
  record_shape_ = datum_shape(datum_);
  transformer_ = std::make_unique<DataTransformer>(param_.transform_param(), phase(), where());
  transformer_->check_input_shape(record_shape_);
  const DatumShape output = transformer_->output_shape(record_shape_);
  data_shape_ = {batch_size_, output.channels, output.height, output.width};
  XLOG(INFO) << "output data size: " << batch_size_ << "," << output.channels << ","
             << output.height << "," << output.width;

  for (unsigned i = 0; i < data.prefetch(); ++i) {
    auto batch = std::make_unique<Batch>();
    batch->data.resize(static_cast<std::size_t>(batch_size_) * output.count());
    if (output_labels_) batch->labels.resize(batch_size_);
    free_batches_.push(batch.get());
    batches_.push_back(std::move(batch));
  }
  reshape({}, top);
}

void DataLayer::reshape(const BlobVec&, const BlobVec& top) {
  top[0]->reshape(data_shape_);
  if (output_labels_) top[1]->reshape(std::vector<int>{batch_size_});
}

// Started on the first forward rather than in setup, so that a seed given to
// the layer after setup (by the net or the solver) still decides the crops.
void DataLayer::start_prefetching() {
  const std::uint64_t high = random().engine()();
  const std::uint64_t low = random().engine()();
  transform_random_.reseed((high << 32) | low);
  const unsigned rand_skip = param_.data_param().rand_skip();
  if (rand_skip > 0) {
    const std::uint32_t skip = random().below(rand_skip);
    XLOG(INFO) << where() << ": skipping the first " << skip << " records";
    for (std::uint32_t i = 0; i < skip; ++i) advance_cursor();
  }
  started_ = true;
  prefetch_thread_ = std::thread([this] { prefetch_loop(); });
}

void DataLayer::stop_prefetching() {
  stopping_ = true;
  free_batches_.close();
  full_batches_.close();
  if (prefetch_thread_.joinable()) prefetch_thread_.join();
}

void DataLayer::prefetch_loop() {
  Batch* batch = nullptr;
  while (!stopping_ && free_batches_.pop(batch)) {
    try {
      fill_batch(*batch);
    } catch (const std::exception& error) {
      batch->error = error.what();
    } catch (...) {
      batch->error = where() + ": unknown error in the data prefetch thread";
    }
    const bool failed = !batch->error.empty();
    full_batches_.push(batch);
    if (failed) return;  // the cursor's position is unknown; nothing more to read
  }
}

void DataLayer::advance_cursor() {
  cursor_->next();
  if (!cursor_->valid()) cursor_->seek_to_first();
}

void DataLayer::fill_batch(Batch& batch) {
  const std::string& source = param_.data_param().source();
  const std::size_t item_size = batch.data.size() / batch_size_;
  for (int item = 0; item < batch_size_; ++item) {
    try {
      parse_datum(cursor_->value(), cursor_->key(), source, &datum_);
    } catch (const Error& error) {
      throw Error(where() + ": " + error.what());
    }
    const DatumShape shape = datum_shape(datum_);
    XTRAIN_CHECK(shape == record_shape_, where(), ": ", describe_record(cursor_->key(), source),
                 " has shape ", shape.to_string(), ", but the first record has ",
                 record_shape_.to_string(),
                 "; every record of a Data layer's DB must have the "
                 "same shape");
    transformer_->transform(datum_, transform_random_, batch.data.data() + item * item_size);
    if (output_labels_) batch.labels[item] = static_cast<float>(datum_.label());
    advance_cursor();
  }
}

void DataLayer::forward_cpu(const BlobVec&, const BlobVec& top) {
  if (!failure_.empty()) throw Error(failure_);
  if (!started_) start_prefetching();
  Batch* batch = nullptr;
  const bool popped = full_batches_.pop(batch);
  XTRAIN_ASSERT(popped, "the prefetch queue closed while the layer is alive");
  if (!batch->error.empty()) {
    failure_ = batch->error;
    throw Error(failure_);
  }
  std::memcpy(top[0]->mutable_cpu_data(), batch->data.data(), batch->data.size() * sizeof(float));
  if (output_labels_) {
    std::memcpy(top[1]->mutable_cpu_data(), batch->labels.data(),
                batch->labels.size() * sizeof(float));
  }
  free_batches_.push(batch);
}

void register_data_layer(LayerRegistry& registry) { add_layer<DataLayer>(registry, "Data"); }

}  // namespace xtrain
