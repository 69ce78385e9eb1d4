// Mixed precision: in which number type each layer stores what it passes on
// and multiplies in, with NVIDIA Caffe 0.17's fields (docs/precision.md).
//
// A layer has four types. forward_type: how its tops are stored;
// backward_type: how the gradients it writes (its bottoms' and its
// parameters') are stored; forward_math / backward_math: what its matrix
// products (Convolution, Deconvolution, InnerProduct) accumulate in. Each
// comes from the layer's own field, else the net's default_* field, else
// FLOAT; a run-wide override (`xtrain train --precision=bf16`) replaces all
// of them. A net whose layers are all FLOAT computes exactly as without
// these fields, bit for bit.
//
// In a 16-bit layer:
//   - every top is rounded to forward_type once the layer has computed it,
//     except the values that must stay exact: what the data layers produce
//     and what is computed from it alone (labels, masks, indices), the tops
//     of layers that output integers (ArgMax, Accuracy, ...), and the net's
//     outputs (losses and metrics, as the user reads them);
//   - every gradient the layer writes is rounded to backward_type;
//   - Convolution, Deconvolution and InnerProduct multiply operands rounded
//     to the type (weights, inputs, gradients), accumulating in fp32 (the
//     CPU always accumulates in fp32, whatever *_math says);
//   - every other layer computes in fp32 from the stored values.
// The weights themselves stay fp32 (the solver's master copy); so do the
// update and its history.
//
// Rounding is round-to-nearest-even; FLOAT16 overflows to infinity past
// 65504, which is what loss scaling (NetParameter.global_grad_scale) guards
// against.
#pragma once

#include <optional>
#include <string>

#include "xtrain/export.hpp"

namespace xtrain {

class NetParameter;
class LayerParameter;

enum class NumberType { kFloat32, kFloat16, kBfloat16 };

// "fp32", "fp16", "bf16".
XTRAIN_API const char* number_type_name(NumberType type);
// The spellings --precision and the Python package take: fp32, fp16, bf16
// (also float32, float16, bfloat16, any case). Throws xtrain::Error naming
// `what` and the accepted values for anything else.
XTRAIN_API NumberType parse_number_type(const std::string& text, const std::string& what);
// Bytes of one value.
XTRAIN_API int number_type_bytes(NumberType type);

struct XTRAIN_API LayerPrecision {
  NumberType forward_type = NumberType::kFloat32;
  NumberType backward_type = NumberType::kFloat32;
  NumberType forward_math = NumberType::kFloat32;
  NumberType backward_math = NumberType::kFloat32;

  bool is_float32() const {
    return forward_type == NumberType::kFloat32 && backward_type == NumberType::kFloat32 &&
           forward_math == NumberType::kFloat32 && backward_math == NumberType::kFloat32;
  }
  // "bf16", or "forward fp16, backward fp32, math fp32" when they differ.
  std::string to_string() const;
  // One type for all four: what --precision sets.
  static LayerPrecision uniform(NumberType type);
};

XTRAIN_API bool operator==(const LayerPrecision& a, const LayerPrecision& b);
inline bool operator!=(const LayerPrecision& a, const LayerPrecision& b) { return !(a == b); }

// The precision of `layer` in `net`: its fields, else the net's defaults,
// else FLOAT; `run_override` (--precision) replaces them all. Throws
// xtrain::Error naming the layer and the field for a type no layer computes
// in (DOUBLE, INT, UINT, BOOL).
XTRAIN_API LayerPrecision resolve_layer_precision(const NetParameter& net,
                                                  const LayerParameter& layer,
                                                  std::optional<NumberType> run_override);

// Whether this CPU multiplies bfloat16 in hardware (AVX512-BF16 or AMX, as
// oneDNN runs it after ONEDNN_MAX_CPU_ISA / XTRAIN_MAX_CPU_ISA); elsewhere
// bf16 convolutions and inner products are computed in fp32 on rounded
// operands: the same numbers, slower.
XTRAIN_API bool cpu_computes_bfloat16_natively();

}  // namespace xtrain
