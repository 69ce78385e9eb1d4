// xtrain extract_features: Caffe's tools/extract_features. Runs a trained
// net (fed by its own data layer) forward for --iterations mini-batches and
// writes the named blobs, one Datum of floats per item, into one LMDB per
// blob. Item k of the run (batch k / B, position k % B) gets the key
// "%010d" of k, as Caffe 1.0 writes it (caffe::format_int(k, 10)), and a
// Datum with the blob's legacy channels/height/width (a blob of more than 4
// axes: count/num x 1 x 1).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>

#include "command.hpp"
#include "flags.hpp"
#include "xtrain/error.hpp"
#include "xtrain/lmdb_database.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/net.hpp"
#include "xtrain/net_upgrade.hpp"
#include "xtrain/proto_io.hpp"

DEFINE_string(blobs, "", "extract_features: the blobs to write, comma-separated (e.g. fc7,prob)");
DEFINE_string(outputs, "",
              "extract_features: one new database per blob of --blobs, comma-separated");
DEFINE_string(backend, "lmdb", "extract_features: database type of --outputs (only lmdb)");

namespace xtrain::cli {
namespace {

struct ExtractionJob {
  std::string weights;
  std::string model;
  std::vector<std::string> blobs;
  std::vector<std::string> outputs;
  int iterations = 0;
  std::string backend;
  std::string gpu;  // --gpu's syntax; empty: CPU
};

const char kPositionalUsage[] =
    "xtrain extract_features WEIGHTS NET BLOBS DBS NUM_BATCHES lmdb [CPU|GPU] [DEVICE_ID]";

int parse_count(const std::string& text, const std::string& what) {
  std::size_t used = 0;
  int value = 0;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  XTRAIN_CHECK(used == text.size() && !text.empty(), what, " '", text, "' is not a number");
  return value;
}

// Caffe's form: WEIGHTS NET BLOBS DBS NUM_BATCHES DB_TYPE [CPU|GPU] [DEVICE_ID].
ExtractionJob job_from_arguments(const std::vector<std::string>& arguments) {
  XTRAIN_CHECK(arguments.size() >= 6 && arguments.size() <= 8, "expected ", kPositionalUsage,
               " (got ", arguments.size(), " arguments)");
  XTRAIN_CHECK(
      FLAGS_model.empty() && FLAGS_weights.empty() && FLAGS_blobs.empty() && FLAGS_outputs.empty(),
      "give the net either as arguments (", kPositionalUsage,
      ") or with --model, --weights, --blobs and --outputs, not both");
  ExtractionJob job;
  job.weights = arguments[0];
  job.model = arguments[1];
  job.blobs = split_commas(arguments[2]);
  job.outputs = split_commas(arguments[3]);
  job.iterations = parse_count(arguments[4], "NUM_BATCHES");
  job.backend = arguments[5];
  job.gpu = FLAGS_gpu;
  if (arguments.size() > 6) {
    XTRAIN_CHECK(arguments[6] == "CPU" || arguments[6] == "GPU", "'", arguments[6],
                 "': the argument after the database type is CPU or GPU");
    if (arguments[6] == "GPU") {
      job.gpu = arguments.size() > 7 ? std::to_string(parse_count(arguments[7], "DEVICE_ID")) : "0";
    } else {
      XTRAIN_CHECK(arguments.size() == 7, "CPU takes no DEVICE_ID");
      job.gpu.clear();
    }
  }
  return job;
}

ExtractionJob job_from_flags() {
  ExtractionJob job;
  job.weights = FLAGS_weights;
  job.model = FLAGS_model;
  job.blobs = split_commas(FLAGS_blobs);
  job.outputs = split_commas(FLAGS_outputs);
  job.iterations = FLAGS_iterations;
  job.backend = FLAGS_backend;
  job.gpu = FLAGS_gpu;
  XTRAIN_CHECK(!job.model.empty(), "xtrain extract_features needs --model=NET.prototxt (or ",
               kPositionalUsage, ")");
  XTRAIN_CHECK(!job.weights.empty(),
               "xtrain extract_features needs --weights=MODEL.caffemodel (an untrained net's "
               "features mean nothing)");
  return job;
}

// Everything that can be checked before the net is built.
void check_job(const ExtractionJob& job) {
  XTRAIN_CHECK(job.backend != "leveldb" && job.backend != "LEVELDB",
               "LevelDB is not supported: xtrain writes LMDB only; use lmdb (--backend=lmdb)");
  XTRAIN_CHECK(job.backend == "lmdb" || job.backend == "LMDB", "unknown database type '",
               job.backend, "'; use lmdb");
  XTRAIN_CHECK(!job.blobs.empty(), "name the blobs to extract (--blobs=fc7,prob)");
  XTRAIN_CHECK(job.blobs.size() == job.outputs.size(), job.blobs.size(), " blobs (",
               job.blobs.size() == 1 ? job.blobs[0] : std::string("--blobs"), ") but ",
               job.outputs.size(), " output databases: give one database per blob, in order");
  XTRAIN_CHECK(job.iterations > 0, "the number of mini-batches must be positive, got ",
               job.iterations);
  std::set<std::string> seen;
  for (const std::string& output : job.outputs) {
    XTRAIN_CHECK(seen.insert(output).second, "the output database '", output,
                 "' is named twice; give each blob its own");
    std::error_code error;
    XTRAIN_CHECK(!std::filesystem::exists(output, error), "'", output,
                 "' already exists; delete it first (rm -r ", output,
                 ") or choose another output database");
  }
}

// The blobs of the net in `param`'s phase, in the order the layers make
// them (Split layers' copies aside), as the user names them.
std::vector<std::string> blob_names_of(const NetParameter& param) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  const NetParameter filtered = filter_net(param);
  for (const LayerParameter& layer : filtered.layer()) {
    for (const std::string& top : layer.top()) {
      if (seen.insert(top).second) names.push_back(top);
    }
  }
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// The Datum of item `n` of `blob`.
Datum item_datum(const Blob& blob, int n) {
  const std::size_t per_item = blob.count() / static_cast<std::size_t>(blob.shape(0));
  Datum datum;
  if (blob.num_axes() <= 4) {
    datum.set_channels(blob.channels());
    datum.set_height(blob.height());
    datum.set_width(blob.width());
  } else {
    datum.set_channels(static_cast<int>(per_item));
    datum.set_height(1);
    datum.set_width(1);
  }
  const float* values = blob.cpu_data() + per_item * static_cast<std::size_t>(n);
  datum.mutable_float_data()->Add(values, values + per_item);
  return datum;
}

std::string record_key(std::size_t index) {
  char key[32];
  std::snprintf(key, sizeof key, "%010zu", index);
  return key;
}

void extract(const ExtractionJob& job) {
  check_job(job);
  configure_compute();
  NetOptions options;
  options.device = choose_device(job.gpu, false, 0);
  options.share_activation_memory = FLAGS_share_activation_memory;
  options.keep_blobs = job.blobs;  // read after forward: they keep their own storage
  options.channel_blocked_activations = FLAGS_channel_blocked_activations;
  options.share_kept_copies = FLAGS_share_kept_copies;
  options.fuse_layers = FLAGS_fuse_layers;
  options.precision = precision_flag();
  NetParameter param = read_net_params_from_text_file(job.model);
  param.mutable_state()->set_phase(parse_phase(FLAGS_phase, TEST));
  param.mutable_state()->set_level(FLAGS_level);
  for (const std::string& stage : split_commas(FLAGS_stage)) {
    param.mutable_state()->add_stage(stage);
  }
  upgrade_net_inputs(&param);
  const std::vector<std::string> names = blob_names_of(param);
  for (const std::string& name : job.blobs) {
    XTRAIN_CHECK(std::find(names.begin(), names.end(), name) != names.end(), "the net ", job.model,
                 " has no blob '", name, "' in its ", Phase_Name(param.state().phase()),
                 " phase; its blobs: ", joined(names));
  }

  XLOG(INFO) << "Use " << options.device.to_string() << ".";
  Net net(param, options);
  copy_weights(net, job.weights, /*scoring=*/true);
  std::vector<std::shared_ptr<Blob>> blobs;
  for (const std::string& name : job.blobs) {
    blobs.push_back(net.blob_by_name(name));
    XTRAIN_CHECK(blobs.back()->num_axes() >= 1 && blobs.back()->shape(0) > 0, "blob '", name, "' (",
                 blobs.back()->shape_string(), ") has no items to write");
  }

  std::vector<std::unique_ptr<LmdbWriter>> writers;
  try {
    for (const std::string& output : job.outputs) {
      XLOG(INFO) << "Opening dataset " << output;
      writers.push_back(std::make_unique<LmdbWriter>(LmdbDatabase::open_for_writing(output)));
    }
    XLOG(INFO) << "Extracting features of " << job.iterations << " mini-batches";
    std::vector<std::size_t> written(blobs.size(), 0);
    for (int iteration = 0; iteration < job.iterations; ++iteration) {
      net.forward();
      for (std::size_t i = 0; i < blobs.size(); ++i) {
        for (int n = 0; n < blobs[i]->shape(0); ++n) {
          writers[i]->put(
              record_key(written[i]),
              serialize_record(item_datum(*blobs[i], n),
                               "blob '" + job.blobs[i] + "' of item " + std::to_string(n),
                               "extract a smaller blob"));
          if (++written[i] % 1000 == 0) {
            XLOG(INFO) << "Extracted features of " << written[i] << " query images for feature "
                       << "blob " << job.blobs[i];
          }
        }
      }
    }
    for (std::size_t i = 0; i < writers.size(); ++i) {
      writers[i]->commit();
      XLOG(INFO) << "Extracted features of " << written[i] << " query images for feature blob "
                 << job.blobs[i] << " into " << job.outputs[i];
    }
  } catch (...) {
    // The databases did not exist before we started: do not leave halves.
    writers.clear();
    std::error_code ignored;
    for (const std::string& output : job.outputs) std::filesystem::remove_all(output, ignored);
    throw;
  }
  XLOG(INFO) << "Successfully extracted the features!";
}

}  // namespace

int extract_features_command(const std::vector<std::string>& arguments) {
  extract(arguments.empty() ? job_from_flags() : job_from_arguments(arguments));
  return 0;
}

}  // namespace xtrain::cli
