// Where a letterbox puts an image on a canvas: SSD's FIT_LARGE_SIZE_AND_PAD
// resize (the AnnotatedData layer) and `xtrain detect --letterbox` place a
// w x h image on a width x height canvas the same way, so a detector sees at
// deploy time what it was trained on:
//
//   s = min(width / w, height / h)
//   placed size  = (round(w s), round(h s)), each at least 1, at most the canvas
//   placed left  = (width - placed width) / 2,  top = (height - placed height) / 2
//                  (rounded down: an odd pixel of padding goes right or below)
#pragma once

#include <algorithm>
#include <cmath>

namespace xtrain {

struct LetterboxPlacement {
  int left = 0;
  int top = 0;
  int width = 0;
  int height = 0;
};

inline LetterboxPlacement letterbox_placement(int image_width, int image_height, int canvas_width,
                                              int canvas_height) {
  const double scale = std::min(static_cast<double>(canvas_width) / image_width,
                                static_cast<double>(canvas_height) / image_height);
  LetterboxPlacement placed;
  placed.width = std::clamp(static_cast<int>(std::lround(image_width * scale)), 1, canvas_width);
  placed.height = std::clamp(static_cast<int>(std::lround(image_height * scale)), 1, canvas_height);
  placed.left = (canvas_width - placed.width) / 2;
  placed.top = (canvas_height - placed.height) / 2;
  return placed;
}

}  // namespace xtrain
