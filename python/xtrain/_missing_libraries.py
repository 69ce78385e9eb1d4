"""The message for an ``import xtrain`` that fails because a CUDA library
was not found: the loader's own words ("libcudnn.so.9: cannot open shared
object file") do not say that they come from NVIDIA's wheels, nor that the
CPU wheel needs none of them.

The CUDA wheel (scripts/build_wheel.sh, version +cu13) bundles every library
but NVIDIA's: those are its requirements on NVIDIA's PyPI wheels, which a
``pip install --no-deps`` skips, or a system-wide CUDA install. The driver
(libcuda.so.1) is not among them: nothing links it, and a machine without a
GPU imports the package and trains on the CPU.
"""
import re

_CUDA_LIBRARY = re.compile(r"\b(lib(?:cudart|cublas|cublasLt|cudnn[a-z_]*|nccl)\.so[.\d]*)")


def _nvidia_requirements():
    """The NVIDIA wheels the installed xtrain requires (none in a build tree)."""
    try:
        from importlib import metadata
        return [r for r in metadata.requires("xtrain") or [] if r.startswith("nvidia-")]
    except Exception:  # not installed by pip (a build tree): no metadata
        return []


def explain(error):
    """An ImportError that says what to install, when `error` (raised while
    loading xtrain's module) names a CUDA library; None otherwise."""
    match = _CUDA_LIBRARY.search(str(error))
    if not match:
        return None
    requirements = _nvidia_requirements()
    if requirements:
        where = ("this is xtrain's CUDA wheel, which loads NVIDIA's libraries from their "
                 "own wheels (installed with it, unless pip ran with --no-deps): "
                 "pip install " + " ".join("'%s'" % r for r in requirements) +
                 "; or put a CUDA install with them on the loader's path "
                 "(LD_LIBRARY_PATH, ldconfig). Without a GPU, xtrain's CPU wheel "
                 "(no +cu label) needs none of them")
    else:
        where = ("this xtrain was built with CUDA: put the CUDA runtime, cuBLAS, cuDNN "
                 "and NCCL it was linked with on the loader's path (LD_LIBRARY_PATH, "
                 "ldconfig), or build with -DXTRAIN_USE_CUDA=OFF")
    return ImportError("xtrain: %s was not found: %s. (%s)" % (match.group(1), where, error))
