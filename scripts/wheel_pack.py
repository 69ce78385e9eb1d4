#!/usr/bin/env python3
"""Packs a staged package folder into a wheel (PEP 427), for
scripts/build_wheel.sh, which then has auditwheel bundle its libraries.

  wheel_pack.py STAGE DIST_DIR VERSION PYTHON_TAG [REQUIREMENT...]

STAGE holds the package folder xtrain/ (the module, the Python files, the
libraries in xtrain/lib and the tools in xtrain/bin). The wheel is
DIST_DIR/xtrain-VERSION-PYTHON_TAG-PYTHON_TAG-linux_x86_64.whl with a console
script per tool (xtrain.tools) and numpy, protobuf and Pillow as its
dependencies, with the REQUIREMENTs after them (the CUDA wheel's NVIDIA
libraries, scripts/wheel_cuda_deps.py). VERSION may carry a local label
(0.1.0+cu13). Prints the wheel's path.
"""
import base64
import hashlib
import os
import sys
import zipfile

# What the module imports at run time. protobuf: the Python code of the
# protoc the build ran (3.21 on Debian 12) needs 3.20 or later (and loads
# with PyPI's newest, 7.36, checked 2026-12).
# Pillow: xtrain.io's images (Classifier, Detector, load_image).
REQUIRES = ["numpy", "protobuf>=3.20", "Pillow"]
CONSOLE_SCRIPTS = ["xtrain", "convert_imageset", "convert_annoset", "compute_mean",
                   "compute_image_mean", "convert_mnist_data", "idx_to_images"]


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__.split("\n\n")[1])
    stage, dist, version, python_tag = sys.argv[1:5]
    requires = REQUIRES + sys.argv[5:]
    tag = f"{python_tag}-{python_tag}-linux_x86_64"
    info = f"xtrain-{version}.dist-info"
    metadata = "\n".join(
        ["Metadata-Version: 2.1", "Name: xtrain", f"Version: {version}",
         "Summary: xtrain's Python package: pycaffe's API (import xtrain as caffe) on "
         "xtrain's C++ nets and solvers, with its command-line tools",
         "Requires-Python: >=3.9"] +
        [f"Requires-Dist: {r}" for r in requires]) + "\n"
    wheel = "\n".join(["Wheel-Version: 1.0", "Generator: xtrain scripts/wheel_pack.py",
                       "Root-Is-Purelib: false", f"Tag: {tag}"]) + "\n"
    entry_points = "[console_scripts]\n" + "".join(
        f"{name} = xtrain.tools:{name}\n" for name in CONSOLE_SCRIPTS)

    os.makedirs(dist, exist_ok=True)
    path = os.path.join(dist, f"xtrain-{version}-{tag}.whl")
    records = []
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for folder, dirs, files in os.walk(os.path.join(stage, "xtrain")):
            dirs.sort()
            for file in sorted(files):
                if file.endswith(".pyc"):
                    continue
                full = os.path.join(folder, file)
                name = os.path.relpath(full, stage)
                with open(full, "rb") as source:
                    data = source.read()
                entry = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
                entry.external_attr = (os.stat(full).st_mode & 0o777 | 0o100000) << 16
                entry.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(entry, data)
                records.append(record_line(name, data))
        for name, text in [("METADATA", metadata), ("WHEEL", wheel),
                           ("entry_points.txt", entry_points)]:
            data = text.encode()
            archive.writestr(f"{info}/{name}", data)
            records.append(record_line(f"{info}/{name}", data))
        records.append(f"{info}/RECORD,,")
        archive.writestr(f"{info}/RECORD", "\n".join(records) + "\n")
    print(path)


if __name__ == "__main__":
    main()
