"""xtrain for Python, with pycaffe's API: ``import xtrain as caffe`` runs
pycaffe code unchanged (for what this package covers; see docs/python.md).

The nets, blobs and solvers are xtrain's C++ objects (``xtrain._xtrain``);
this package adds pycaffe's conveniences on top (``net.blobs``,
``net.params``, ``forward(**inputs)``, ...), written in ``pycaffe.py``, and
pycaffe's Python modules: ``proto`` (``caffe_pb2``), ``layers``/``params``/
``NetSpec`` (``net_spec``), ``io``, ``Classifier``, ``Detector`` and
``draw`` (which pycaffe left to ``import caffe.draw`` for want of pydot;
ours needs only Graphviz's dot program, so it comes with the package).
"""
try:
    from . import _xtrain  # noqa: F401
except ImportError as _error:
    from ._missing_libraries import explain as _explain
    _explained = _explain(_error)
    if _explained is None:
        raise
    raise _explained from None
from ._xtrain import (  # noqa: F401  (the package's API)
    TRAIN,
    TEST,
    Blob,
    Net,
    Solver,
    XtrainError,
    cuda_compiled_in,
    get_precision,
    get_solver,
    layer_type_list,
    log_level,
    openmp_waiting,
    set_device,
    set_log_level,
    set_mode_cpu,
    set_mode_gpu,
    set_precision,
    set_random_seed,
    solver_types,
)
from . import _xtrain as _core
from . import pycaffe as _pycaffe  # adds pycaffe's Net conveniences  # noqa: F401
from .python_layer import Layer  # noqa: F401  (the base of `type: "Python"` layers)
from . import draw, io, proto  # noqa: F401
from .classifier import Classifier  # noqa: F401
from .detector import Detector  # noqa: F401
from .net_spec import NetSpec, layers, params, to_proto  # noqa: F401
from . import progress as _progress
from .progress import progress_enabled, set_progress  # noqa: F401

# Idle OpenMP threads spin while the other processes leave our CPUs idle and
# yield while they do not, as in the xtrain tool (openmp_waiting() says which;
# OMP_WAIT_POLICY or GOMP_SPINCOUNT set before the import win).
openmp_waiting()

# step(n, progress=) and solve(resume_file, progress=): a progress bar, and
# a snapshot on Ctrl-C (progress.py).
_progress.install(Solver)

# SGDSolver, NesterovSolver, AdaGradSolver, RMSPropSolver, AdaDeltaSolver,
# AdamSolver: one per update rule the library has.
for _type in solver_types():
    globals()[_type + "Solver"] = getattr(_core, _type + "Solver")
del _type



def has_nccl():
    """False: pycaffe's NCCL class (multi-GPU training driven from Python) is
    not part of this package; `xtrain train --gpu=all` trains on several
    GPUs."""
    return False


__all__ = [name for name in globals() if not name.startswith("_")]
