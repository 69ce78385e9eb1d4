#!/usr/bin/env python3
"""A small object-detection data set from the packaged Fashion-MNIST.

Each image is a grey canvas (96 x 96 by default) with 1 to 4 Fashion-MNIST
items pasted at random places and sizes; an item's box is the rectangle of
its non-zero pixels after scaling, so the boxes are exact. Written as

  OUT/images/{train,test}_NNNNN.png
  OUT/annotations/{train,test}_NNNNN.xml    (--format voc, Pascal VOC)
  OUT/images/{train,test}_NNNNN.txt         (--format yolo, beside the image)
  OUT/{train,test}.txt                      convert_annoset's list files
  OUT/labelmap.prototxt                     background = 0, the 10 classes 1..10
  OUT/classes.names                         (--format yolo) the 10 names

VOC boxes are in pixels with xmax/ymax one past the last pixel, so that
dividing by the image size (what convert_annoset does) gives the exact
fraction of the image the item covers. Only the standard library is used
(no numpy): the IDX files are read with gzip, the PNGs written with zlib.
"""

import argparse
import gzip
import os
import random
import struct
import zlib

CLASSES = [
    ("tshirt", "T-shirt/top"), ("trouser", "Trouser"), ("pullover", "Pullover"),
    ("dress", "Dress"), ("coat", "Coat"), ("sandal", "Sandal"), ("shirt", "Shirt"),
    ("sneaker", "Sneaker"), ("bag", "Bag"), ("ankle_boot", "Ankle boot"),
]


def read_idx(path):
    """The payload of a gzipped IDX file and its dimensions."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return data[4 + 4 * dims:], shape


def write_png(path, rows, width):
    """An 8-bit grey PNG of `rows` (bytes objects of `width` pixels)."""
    raw = b"".join(b"\x00" + bytes(row) for row in rows)

    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body +
                struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, len(rows), 8, 0, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) +
                chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def scaled_item(pixels, index, size):
    """Item `index` (28 x 28) scaled to size x size (nearest neighbour), as rows."""
    start = index * 784
    picks = [i * 28 // size for i in range(size)]
    return [bytes(pixels[start + 28 * sy + sx] for sx in picks) for sy in picks]


def tight_box(rows):
    """(x0, y0, x1, y1) of the non-zero pixels, x1/y1 one past the last; None if blank."""
    ys = [y for y, row in enumerate(rows) if any(row)]
    if not ys:
        return None
    xs = [x for x in range(len(rows[0])) if any(row[x] for row in rows)]
    return xs[0], ys[0], xs[-1] + 1, ys[-1] + 1


def overlap(a, b):
    """Intersection over union of two (x0, y0, x1, y1) boxes."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    area = lambda r: (r[2] - r[0]) * (r[3] - r[1])
    return inter / (area(a) + area(b) - inter)


def make_canvas(rng, pixels, labels, count, args):
    """One canvas: its rows and its objects [(class, x0, y0, x1, y1)]."""
    side = args.canvas
    canvas = [bytearray(side) for _ in range(side)]
    objects = []
    for _ in range(rng.randint(args.min_items, args.max_items)):
        for _attempt in range(20):
            index = rng.randrange(count)
            size = rng.randint(args.min_size, min(args.max_size, side))
            rows = scaled_item(pixels, index, size)
            box = tight_box(rows)
            if box is None:
                continue
            left = rng.randint(0, side - size)
            top = rng.randint(0, side - size)
            placed = (left + box[0], top + box[1], left + box[2], top + box[3])
            if all(overlap(placed, o[1:]) <= args.max_overlap for o in objects):
                break
        else:
            continue
        for y, row in enumerate(rows):
            target = canvas[top + y]
            target[left:left + size] = bytes(map(max, target[left:left + size], row))
        objects.append((labels[index],) + placed)
    return canvas, objects


def voc_xml(name, side, objects):
    parts = ["<annotation>\n  <filename>%s</filename>\n" % name,
             "  <size><width>%d</width><height>%d</height><depth>1</depth></size>\n"
             % (side, side)]
    for label, x0, y0, x1, y1 in objects:
        parts.append("  <object><name>%s</name><difficult>0</difficult>"
                     "<bndbox><xmin>%d</xmin><ymin>%d</ymin><xmax>%d</xmax><ymax>%d</ymax>"
                     "</bndbox></object>\n" % (CLASSES[label][0], x0, y0, x1, y1))
    parts.append("</annotation>\n")
    return "".join(parts)


def yolo_text(side, objects):
    return "".join("%d %.6f %.6f %.6f %.6f\n" % (
        label, (x0 + x1) / 2 / side, (y0 + y1) / 2 / side, (x1 - x0) / side, (y1 - y0) / side)
        for label, x0, y0, x1, y1 in objects)


def write_split(split, canvases, rng, pixels, labels, count, args):
    lines = []
    boxes = 0
    for i in range(canvases):
        name = "%s_%05d" % (split, i)
        canvas, objects = make_canvas(rng, pixels, labels, count, args)
        boxes += len(objects)
        image = "images/%s.png" % name
        write_png(os.path.join(args.out, image), canvas, args.canvas)
        if args.format == "voc":
            annotation = "annotations/%s.xml" % name
            with open(os.path.join(args.out, annotation), "w") as f:
                f.write(voc_xml(name + ".png", args.canvas, objects))
            lines.append("%s %s\n" % (image, annotation))
        else:
            with open(os.path.join(args.out, "images", name + ".txt"), "w") as f:
                f.write(yolo_text(args.canvas, objects))
            lines.append(image + "\n")
    with open(os.path.join(args.out, split + ".txt"), "w") as f:
        f.writelines(lines)
    print("make_fashion_detection: %s: %d images, %d boxes" % (split, canvases, boxes))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", default="/usr/share/datasets/fashion-mnist",
                        help="folder of the gzipped IDX files (Debian's dataset-fashion-mnist)")
    parser.add_argument("--out", default="data/fashion_detection")
    parser.add_argument("--format", choices=["voc", "yolo"], default="voc")
    parser.add_argument("--train", type=int, default=2000, help="training images")
    parser.add_argument("--test", type=int, default=400, help="test images")
    parser.add_argument("--canvas", type=int, default=96, help="image side in pixels")
    parser.add_argument("--min-items", type=int, default=1)
    parser.add_argument("--max-items", type=int, default=4)
    parser.add_argument("--min-size", type=int, default=20, help="smallest item side (pixels)")
    parser.add_argument("--max-size", type=int, default=48, help="largest item side (pixels)")
    parser.add_argument("--max-overlap", type=float, default=0.2,
                        help="largest IoU between two items' boxes")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if not 1 <= args.min_items <= args.max_items:
        parser.error("need 1 <= --min-items <= --max-items")
    if not 1 <= args.min_size <= args.max_size:
        parser.error("need 1 <= --min-size <= --max-size")

    os.makedirs(os.path.join(args.out, "images"), exist_ok=True)
    if args.format == "voc":
        os.makedirs(os.path.join(args.out, "annotations"), exist_ok=True)
    with open(os.path.join(args.out, "labelmap.prototxt"), "w") as f:
        f.write('item { name: "background" label: 0 display_name: "background" }\n')
        for label, (name, display) in enumerate(CLASSES, start=1):
            f.write('item { name: "%s" label: %d display_name: "%s" }\n' % (name, label, display))
    with open(os.path.join(args.out, "classes.names"), "w") as f:
        f.writelines(name + "\n" for name, _ in CLASSES)

    rng = random.Random(args.seed)
    for split, prefix, canvases in (("train", "train", args.train), ("test", "t10k", args.test)):
        pixels, shape = read_idx(os.path.join(args.source, prefix + "-images-idx3-ubyte.gz"))
        labels, _ = read_idx(os.path.join(args.source, prefix + "-labels-idx1-ubyte.gz"))
        write_split(split, canvases, rng, pixels, labels, shape[0], args)


if __name__ == "__main__":
    main()
