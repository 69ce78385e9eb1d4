#!/usr/bin/env bash
# The Fashion-MNIST detection task: generates the images and their Pascal VOC
# annotations (make_fashion_detection.py, a few seconds) and converts them with
# convert_annoset into data/fashion_detection/{train,test}_lmdb, records of
# SSD's AnnotatedDatum that the AnnotatedData layer reads, with
# data/fashion_detection/labelmap.prototxt (background = 0, the ten classes
# 1..10). Extra arguments go to the generator (e.g. --train 5000 --canvas 128).
set -euo pipefail
cd "$(dirname "$0")/../.."

OUT="data/fashion_detection"
CONVERT="${XTRAIN_BUILD_DIR:-build}/bin/convert_annoset"

if [ -d "$OUT/train_lmdb" ] || [ -d "$OUT/test_lmdb" ]; then
  echo "create_fashion_detection: $OUT/{train,test}_lmdb exist; remove them (rm -r $OUT) to rebuild"
  exit 0
fi
python3 examples/detection/make_fashion_detection.py --out "$OUT" "$@"
# Pascal VOC files, or YOLO's with --format yolo.
FORMAT=(--label_type=xml)
if [ ! -d "$OUT/annotations" ]; then FORMAT=(--label_type=yolo --yolo_names="$OUT/classes.names"); fi
for split in train test; do
  # The PNGs are stored as they are (--encoded); the layer decodes them as
  # 1-channel images (force_color in transform_param makes them 3-channel).
  "$CONVERT" --encoded --shuffle "${FORMAT[@]}" --label_map_file="$OUT/labelmap.prototxt" \
    --check_label "$OUT/" "$OUT/$split.txt" "$OUT/${split}_lmdb"
done
