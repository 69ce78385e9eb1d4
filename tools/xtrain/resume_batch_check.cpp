// check_resume_keeps_the_batch: the snapshot's records read per update
// against this job's images per update.
#include "resume_batch_check.hpp"

#include <cstdint>

#include "xtrain/error.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"

namespace xtrain::cli {
namespace {

bool ends_with(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

}  // namespace

void check_resume_keeps_the_batch(const std::string& resume_file, const Net& train_net,
                                  int replicas, int iter_size, const std::string& replica) {
  if (!ends_with(resume_file, ".solverstate")) return;
  SolverState state;
  try {
    read_proto_from_binary_file(resume_file, &state);
  } catch (const Error&) {
    return;  // the solver's own reading says what is wrong with the file, better
  }
  if (state.iter() <= 0 || !state.has_resume()) return;
  for (const LayerResumeState& layer : state.resume().train_net().layer()) {
    if (layer.records_consumed() == 0 || !train_net.has_layer(layer.name())) continue;
    const auto& names = train_net.layer_names();
    int index = 0;
    while (names[static_cast<std::size_t>(index)] != layer.name()) ++index;
    const auto& tops = train_net.top_vecs()[static_cast<std::size_t>(index)];
    if (tops.empty() || tops.front()->num_axes() == 0) continue;
    const std::int64_t batch = tops.front()->shape(0);
    const std::int64_t now = static_cast<std::int64_t>(replicas) * batch * iter_size;
    const auto read = static_cast<std::int64_t>(layer.records_consumed());
    // Only a whole number of records per update says what the old job took.
    if (read % state.iter() != 0) continue;
    const std::int64_t before = read / state.iter();
    if (before == now) continue;
    const std::int64_t per_pass = static_cast<std::int64_t>(replicas) * batch;
    const std::string replicas_text =
        std::to_string(replicas) + " " + replica + (replicas == 1 ? "" : "s");
    std::string how;
    if (before % per_pass == 0) {
      how = "run it with --iter_size=" + std::to_string(before / per_pass) + " (" +
            replicas_text + " x " + std::to_string(batch) + " x " +
            std::to_string(before / per_pass) + " = " + std::to_string(before) + ")";
    } else {
      how = "choose " + replica + "s, batch_size and iter_size whose product is " +
            std::to_string(before) + " (" + replicas_text + " x " + std::to_string(batch) +
            " does not divide it)";
    }
    throw Error("the snapshot '" + resume_file + "' comes from a job that took " +
                std::to_string(before) + " images per update (layer '" + layer.name() + "' read " +
                std::to_string(read) + " records in " + std::to_string(state.iter()) +
                " iterations), but this job takes " + replicas_text + " x batch " +
                std::to_string(batch) +
                " x iter_size " + std::to_string(iter_size) + " = " + std::to_string(now) +
                ": to resume the same training, " + how +
                "; to train on with another batch, start from its weights instead (--weights=" +
                "the .caffemodel) with a fresh snapshot_prefix");
  }
}

}  // namespace xtrain::cli
