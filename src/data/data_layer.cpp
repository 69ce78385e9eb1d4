#include "data/data_layer.hpp"

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

void DataLayer::open_database() {
  check_parameters();
  const DataParameter& data = param_.data_param();
  batch_size_ = static_cast<int>(data.batch_size());
  source_ = data.source();

  try {
    database_ = LmdbDatabase::open_for_reading(source_);
  } catch (const Error& error) {
    throw Error(where() + ": " + error.what());
  }
  XTRAIN_CHECK(database_->num_records() > 0, where(), ": LMDB '", source_,
               "' is empty (0 records); fill it with convert_mnist_data, convert_imageset or "
               "convert_annoset");
  XLOG(INFO) << "Opened lmdb " << source_;
  cursor_ = std::make_unique<LmdbCursor>(database_);
  set_up_cache();
}

void DataLayer::set_up_cache() {
  const DataParameter& data = param_.data_param();
  if (data.has_parser_threads()) {
    XLOG(INFO) << where() << ": data_param.parser_threads has no effect in xtrain (one thread "
               << "reads the records; threads or decode_threads set the decoding threads)";
  }
  const bool wants_cache = data.cache() || data.precache();
  if (data.shuffle() && !wants_cache) {
    XLOG(WARNING) << where()
                  << ": data_param.shuffle has no effect without cache: true (as in NVIDIA "
                     "Caffe); the records are read in key order";
  }
  if (!wants_cache) return;
  if (phase() != TRAIN) {
    // NVIDIA Caffe caches and shuffles TRAIN data only.
    XLOG(INFO) << where() << ": data_param.cache/shuffle/precache apply to the TRAIN phase only "
               << "(as in NVIDIA Caffe); this layer reads the LMDB in key order";
    return;
  }
  const std::size_t records = database_->num_records();
  check_cache_fits(where(), source_, records,
                   estimated_cache_bytes(records, database_->record_page_bytes()),
                   machine_memory_bytes());
  cache_ = std::make_unique<RecordCache>(records, data.shuffle());
  precache_ = data.precache();
}

void DataLayer::cache_up_to(std::size_t index) {
  if (cache_->cached() > index) return;
  while (cache_->cached() <= index) {
    XTRAIN_CHECK(cursor_->valid(), where(), ": LMDB '", source_, "' ended after ", cache_->cached(),
                 " records while caching, but said it holds ", cache_->records(),
                 "; was it changed while training?");
    cache_->add(cursor_->key(), cursor_->value());
    cursor_->next();
  }
  if (cache_->complete()) {
    XLOG(INFO) << where() << ": cached all " << cache_->records() << " records; later epochs read "
               << (cache_->shuffles() ? "them in a new random order each" : "them from memory");
  }
}

void DataLayer::layer_setup(const BlobVec&, const BlobVec& top) {
  open_database();

  transformer_ = std::make_unique<DataTransformer>(param_.transform_param(), phase(), where());
  Datum first;
  try {
    parse_datum(cursor_->value(), cursor_->key(), source_, &first);
    record_shape_ = transformer_->decoded_shape(first);
  } catch (const Error& error) {
    throw Error(
        where() + ": " +
        (first.encoded() ? describe_record(cursor_->key(), source_) + ": " : std::string()) +
        error.what());
  }
  const TransformationParameter& transform = param_.transform_param();
  if (!first.encoded() && (transform.force_color() || transform.force_gray())) {
    XLOG(WARNING) << where()
                  << ": transform_param.force_color/force_gray apply only to encoded records; "
                     "the records of '"
                  << source_ << "' are not encoded, so they are used as stored";
  }
  transformer_->check_input_shape(record_shape_);
  allocate_batches(transformer_->output_shape(record_shape_), top);
}

void DataLayer::advance_cursor() {
  cursor_->next();
  if (!cursor_->valid()) cursor_->seek_to_first();
}

void DataLayer::start_reading() {
  if (cache_ && cache_->shuffles()) {
    const std::uint64_t high = random().engine()();
    const std::uint64_t low = random().engine()();
    cache_->set_shuffle_seed((high << 32) | low);
  }
  const unsigned rand_skip = param_.data_param().rand_skip();
  if (rand_skip > 0) {
    const std::uint32_t skip = random().below(rand_skip);
    XLOG(INFO) << where() << ": skipping the first " << skip << " records";
    if (cache_) {
      position_ = skip;
    } else {
      for (std::uint32_t i = 0; i < skip; ++i) advance_cursor();
    }
  }
  if (precache_) {
    XLOG(INFO) << where() << ": caching the " << cache_->records() << " records of LMDB '"
               << source_ << "' (data_param.precache)";
    cache_up_to(cache_->records() - 1);
  }
}

void DataLayer::read_record(Record& record) {
  if (!cache_) {
    record.key.assign(cursor_->key());
    record.bytes.assign(cursor_->value());
    advance_cursor();
    return;
  }
  const std::uint64_t records = cache_->records();
  const std::uint64_t epoch = position_ / records;
  const std::size_t in_epoch = static_cast<std::size_t>(position_ % records);
  cache_up_to(epoch == 0 ? in_epoch : records - 1);
  const std::size_t index = cache_->record_at(epoch, in_epoch);
  record.key.assign(cache_->key(index));
  record.bytes.assign(cache_->value(index));
  ++position_;
}

// The cursor cycles through the DB, so whole passes can be left out; with
// the cache only the position moves (records are cached as they are read).
void DataLayer::skip_records(std::uint64_t count) {
  if (cache_) {
    position_ += count;
    return;
  }
  const std::uint64_t remaining = count % database_->num_records();
  for (std::uint64_t i = 0; i < remaining; ++i) advance_cursor();
}

void DataLayer::decode_record(const Record& record, Worker& worker, float* data,
                              float* label) const {
  Datum& datum = worker.datum;
  try {
    parse_datum(record.bytes, record.key, source_, &datum);
  } catch (const Error& error) {
    throw Error(where() + ": " + error.what());
  }
  PixelSource pixels;
  try {
    pixels = transformer_->pixels_of(datum, worker.scratch);
  } catch (const Error& error) {
    throw Error(where() + ": " + describe_record(record.key, source_) + ": " + error.what());
  }
  XTRAIN_CHECK(transformer_->batchable_with(record_shape_, pixels.shape), where(), ": ",
               describe_record(record.key, source_), " has shape ", pixels.shape.to_string(),
               ", but the first record has ", record_shape_.to_string(),
               transformer_->resizes_at_random()
                   ? "; with transform_param's random resize every record must have the same "
                     "channels and at least crop_size's height and width (or set allow_upscale: "
                     "true)"
                   : "; every record of a Data layer's DB must have the same shape",
               !transformer_->resizes_at_random() && param_.transform_param().crop_size() > 0
                   ? " (or, with crop_size and no mean_file, the same channels and at least the "
                     "crop's size)"
                   : "");
  transformer_->transform(pixels, worker.random, worker.scratch, data);
  if (label != nullptr) *label = static_cast<float>(datum.label());
}

void register_data_layer(LayerRegistry& registry) { add_layer<DataLayer>(registry, "Data"); }

}  // namespace xtrain
