// A net as a Graphviz DOT graph, as Caffe's python/draw_net.py draws it:
// one box per layer (name, type, key parameters), coloured by the layer's
// family, and the blobs on the edges between the layers, with their shapes
// when they are known ("conv1  64x20x24x24").
//
// In-place layers (a ReLU whose top is its bottom) sit on the edge of their
// blob: the producer feeds the in-place layer, which feeds the consumers, so
// the graph stays acyclic and reads in execution order. Blobs no layer
// produces (inputs) or consumes (outputs, losses) get an octagon of their own.
//
// Works on the NetParameter alone (filtered to one phase, without Split
// layers), so it needs no built net and no data.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "xtrain/proto/xtrain.pb.h"

namespace xtrain::cli {

// The families draw_net-style pictures colour apart.
enum class LayerFamily {
  kData,
  kConvolution,
  kPooling,
  kActivation,
  kNormalization,
  kInnerProduct,
  kLoss,
  kOther
};

LayerFamily layer_family(const std::string& layer_type);
// "#RRGGBB" fill colour of a family's boxes.
const char* family_colour(LayerFamily family);

// The text inside a double-quoted DOT string: `\` and `"` escaped, line
// breaks as DOT's centred line break "\n".
std::string dot_quoted(const std::string& text);

// "64x20x24x24"; "scalar" for a blob without axes.
std::string shape_text(const std::vector<int>& shape);

// The key parameters draw_net shows for a layer, one item per line
// ("kernel 5x5, stride 1, pad 0", "outputs 20"); empty for layers with none.
std::vector<std::string> layer_parameter_lines(const LayerParameter& layer);

struct NetDrawingOptions {
  // Graphviz's rankdir: LR, TB, BT or RL.
  std::string rankdir = "LR";
  // A caption under the graph ("LeNet, TRAIN phase"); none when empty.
  std::string caption;
};

// DOT text of `net` (already filtered to a phase). `blob_shapes` maps blob
// names to shapes; blobs missing from it are drawn without one.
std::string net_to_dot(const NetParameter& net,
                       const std::map<std::string, std::vector<int>>& blob_shapes,
                       const NetDrawingOptions& options);

}  // namespace xtrain::cli
