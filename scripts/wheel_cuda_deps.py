#!/usr/bin/env python3
"""What xtrain's CUDA wheel (scripts/build_wheel.sh) asks of NVIDIA's own
PyPI wheels, instead of bundling their libraries.

cuBLAS (with cuBLASLt ~600 MB), cuDNN (~500 MB over its sub-libraries, which
libcudnn.so.9 loads by name at run time, so auditwheel cannot rename them)
and NCCL (~220 MB) are far over PyPI's 100 MB default file limit and come as
wheels of their own, which pip installs once for every package that needs
them (PyTorch's practice). So the wheel names them as requirements and
libxtrain finds them through RPATH entries relative to site-packages
(they do not stop the loader's cache: a system-wide toolkit serves as
well when they are not installed).

  wheel_cuda_deps.py LIBXTRAIN INCLUDE_DIR...

Reads which CUDA libraries LIBXTRAIN needs (readelf) and the versions it was
built against from their headers in INCLUDE_DIRs, and prints one line per
library:  SONAME REQUIREMENT SITE_PACKAGES_DIR
e.g. "libcudnn.so.9 nvidia-cudnn-cu13>=9.19,<10 nvidia/cudnn/lib". The lower
bound is the built-against minor version: cuDNN, cuBLAS, the runtime and
NCCL are backward compatible within a major version, not forward.
Exit status 1, with the reason, for a CUDA major version whose wheels this
table does not know (their names and folders change with it).
"""
import re
import subprocess
import sys

# CUDA 13's wheels (names and folders read from their RECORD files: the
# toolkit on our machines is installed from them, nvidia_*.dist-info).
# soname prefix -> (PyPI name, folder under site-packages, header, macros
# for major and minor; one macro with major * 1000 + minor * 10 for the runtime)
WHEELS = {
    13: {
        "libcudart.so.": ("nvidia-cuda-runtime", "nvidia/cu13/lib", "cuda_runtime_api.h",
                          ("CUDART_VERSION",)),
        "libcublas.so.": ("nvidia-cublas", "nvidia/cu13/lib", "cublas_api.h",
                          ("CUBLAS_VER_MAJOR", "CUBLAS_VER_MINOR")),
        "libcudnn.so.": ("nvidia-cudnn-cu13", "nvidia/cudnn/lib", "cudnn_version.h",
                         ("CUDNN_MAJOR", "CUDNN_MINOR")),
        "libnccl.so.": ("nvidia-nccl-cu13", "nvidia/nccl/lib", "nccl.h",
                        ("NCCL_MAJOR", "NCCL_MINOR")),
    },
}


def header_macros(include_dirs, header, names):
    for folder in include_dirs:
        try:
            with open(f"{folder}/{header}") as source:
                text = source.read()
        except OSError:
            continue
        values = []
        for name in names:
            match = re.search(r"^#define\s+%s\s+(\d+)" % name, text, re.M)
            if not match:
                sys.exit(f"wheel_cuda_deps: no '#define {name}' in {folder}/{header}")
            values.append(int(match.group(1)))
        return values
    sys.exit(f"wheel_cuda_deps: {header} is in none of {' '.join(include_dirs)}")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.split("\n\n")[2])
    library, include_dirs = sys.argv[1], sys.argv[2:]
    dynamic = subprocess.run(["readelf", "-d", library], check=True, capture_output=True,
                             text=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", dynamic)
    runtime = [n for n in needed if n.startswith("libcudart.so.")]
    if not runtime:
        sys.exit(f"wheel_cuda_deps: {library} does not link the CUDA runtime")
    major = int(runtime[0].rsplit(".", 1)[1])
    if major not in WHEELS:
        sys.exit(f"wheel_cuda_deps: {library} is built with CUDA {major}; the wheel's "
                 f"requirements are written for CUDA {', '.join(map(str, WHEELS))} "
                 "(add that version's NVIDIA wheels to scripts/wheel_cuda_deps.py)")
    for soname in needed:
        for prefix, (name, folder, header, macros) in WHEELS[major].items():
            if not soname.startswith(prefix):
                continue
            values = header_macros(include_dirs, header, macros)
            if len(values) == 1:  # CUDART_VERSION: 13000 is 13.0
                values = [values[0] // 1000, values[0] % 1000 // 10]
            built_major, built_minor = values
            print(f"{soname} {name}>={built_major}.{built_minor},<{built_major + 1} {folder}")


if __name__ == "__main__":
    main()
