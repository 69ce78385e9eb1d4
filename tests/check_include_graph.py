#!/usr/bin/env python3
"""The include graph of xtrain's modules, checked (docs/architecture.md).

The library is built in layers; a module may include its own headers and
those of the modules below it, never one above or beside it:

    core <- layers <- data <- solvers <- comm <- inference, interchange, reporting <- tools

Every `#include "..."` in src/, include/xtrain and tools/ is an edge from the
including file's module to the included file's module; this script fails
naming the file, the line and the forbidden edge. Also:

  - include/xtrain (the public API) includes only include/xtrain;
  - tools/ includes only include/xtrain and tools/, except the internal
    headers listed in TOOL_DEBT (empty; each entry must still exist, so the
    list can only shrink).

  python3 tests/check_include_graph.py [REPO]   (CTest runs it as IncludeGraph)
"""
import re
import sys
from pathlib import Path

# The modules, lowest first; equal ranks are siblings that may not include
# each other.
MODULE_RANK = {
    "core": 0,
    "layers": 1,
    "data": 2,
    "solvers": 3,
    "comm": 4,
    "inference": 5,
    "interchange": 5,
    "reporting": 5,
    "tools": 6,
}

# src/cuda holds the CUDA runtime (memory, streams, handles, launch helpers):
# core. Every module's GPU code sits beside its CPU code (issue 20's
# feature-first step emptied this list); a file of another module's added
# to src/cuda would have to be listed here, with the module it belongs to.
CUDA_FILES_OF_OTHER_MODULES = {}

# Each public header belongs to the module that implements it, so that
# src/core cannot reach the solvers through xtrain/solver.hpp either. A new
# header must be added here.
PUBLIC_HEADER_MODULES = {
    "atomic_file.hpp": "core",
    "blob.hpp": "core",
    "cpu_convolution_options.hpp": "core",
    "cpu_threads.hpp": "core",
    "cudnn_options.hpp": "core",
    "input_file.hpp": "core",
    "net_memory_count.hpp": "core",
    "net_upgrade.hpp": "core",
    "device.hpp": "core",
    "error.hpp": "core",
    "export.hpp": "core",
    "filler.hpp": "core",
    "gpu_math.hpp": "core",
    "layer.hpp": "core",
    "layer_registry.hpp": "core",
    "precision.hpp": "core",
    "logging.hpp": "core",
    "net.hpp": "core",
    "proto_io.hpp": "core",
    "random.hpp": "core",
    "synced_memory.hpp": "core",
    "proto/xtrain.pb.h": "core",  # generated from proto/xtrain.proto
    "convolution_scratch.hpp": "layers",
    "blocking_queue.hpp": "data",
    "data_wait.hpp": "data",
    "datum_io.hpp": "data",
    "idx_file.hpp": "data",
    "image_codec.hpp": "data",
    "image_datum.hpp": "data",
    "image_list.hpp": "data",
    "lmdb_database.hpp": "data",
    "mean_accumulator.hpp": "data",
    "memory_data_layer.hpp": "data",
    "communicator.hpp": "solvers",
    "lr_policy.hpp": "solvers",
    "snapshot_files.hpp": "solvers",
    "solver.hpp": "solvers",
    "training_observer.hpp": "solvers",
    "training_report.hpp": "reporting",
    "tensorboard.hpp": "reporting",
    "weights_coverage.hpp": "solvers",
    "comm.hpp": "comm",
    "classifier.hpp": "inference",
    "detector.hpp": "inference",
    "image_input_options.hpp": "inference",
    "onnx.hpp": "interchange",
    "darknet.hpp": "interchange",
}

# Edges inside src/ that break the table for now, each with why and what
# ends it. Keep this empty; every entry must still exist.
PENDING_SRC_EDGES = {}

# The tools' use of internal headers: none since issue 20's "small public
# API" step (the tools link libxtrain.so, which exports only include/xtrain's
# API, so an internal header would not link either). Adding an entry is not
# the way to make this test pass: make what the tool needs public.
TOOL_DEBT = set()

SOURCE_SUFFIXES = {".cpp", ".hpp", ".cu", ".cuh", ".c", ".h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
GENERATED = {
    "xtrain/proto/xtrain.pb.h": "include/xtrain/proto/xtrain.pb.h",
    # generated from proto/onnx.proto into the build tree, internal to interchange
    "interchange/onnx.pb.h": "src/interchange/onnx.pb.h",
    # generated from proto/tensorboard.proto, internal to reporting
    "reporting/tensorboard.pb.h": "src/reporting/tensorboard.pb.h",
}


def module_of(path):
    """The module of a repository path (str, '/'-separated), or None."""
    parts = path.split("/")
    if parts[0] == "tools":
        return "tools"
    if parts[0] == "include" and parts[1] == "xtrain":
        return PUBLIC_HEADER_MODULES.get("/".join(parts[2:]))
    if parts[0] == "src" and len(parts) > 2:
        if parts[1] == "cuda":
            return CUDA_FILES_OF_OTHER_MODULES.get(parts[-1], "core")
        if parts[1] in MODULE_RANK and parts[1] != "tools":
            return parts[1]
    return None


def search_roots(path):
    """Where the compiler looks for a quoted include of `path` (its -I list)."""
    directory = path.rsplit("/", 1)[0]
    if path.startswith("tools/"):
        return [directory, "tools", "src", "include"]
    return [directory, "src", "include"]


def resolve(path, name, files):
    if name in GENERATED:
        return GENERATED[name]
    for root in search_roots(path):
        candidate = f"{root}/{name}"
        if candidate in files:
            return candidate
    return None


def may_include(source, target):
    return source == target or MODULE_RANK[target] < MODULE_RANK[source]


def check(files):
    """files: {repository path: text}. Returns (violations, stale entries)."""
    violations = []
    seen = set()
    for path in sorted(files):
        source = module_of(path)
        if source is None:
            where = ("PUBLIC_HEADER_MODULES" if path.startswith("include/")
                     else "MODULE_RANK (a new folder under src/?)")
            violations.append(f"{path}: belongs to no module; add it to {where}")
            continue
        for number, line in enumerate(files[path].splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            name = match.group(1)
            here = f"{path}:{number}: #include \"{name}\""
            included = resolve(path, name, files)
            if included is None:
                violations.append(f"{here}: names no file in src/, include/ or tools/")
                continue
            edge = (path, included)
            seen.add(edge)
            target = module_of(included)
            if target is None:
                continue  # reported above as a file of no module
            if path.startswith("include/") and not included.startswith("include/"):
                violations.append(f"{here}: the public API includes the internal "
                                  f"{included}; public headers include only xtrain/")
            elif source == "tools" and included.startswith("src/"):
                if edge not in TOOL_DEBT:
                    violations.append(f"{here}: tools -> {target}: a tool uses only the "
                                      f"public API (include/xtrain); make what it needs public")
            elif not may_include(source, target) and edge not in PENDING_SRC_EDGES:
                violations.append(f"{here}: {source} -> {target} is forbidden ({source} may "
                                  f"include only {allowed(source)}); move the code to the "
                                  f"module where it belongs (docs/architecture.md)")
    stale = [f"{a} -> {b}: listed in {name} but no longer included; remove the entry"
             for name, table in (("TOOL_DEBT", TOOL_DEBT), ("PENDING_SRC_EDGES", PENDING_SRC_EDGES))
             for a, b in sorted(table) if (a, b) not in seen]
    return violations, stale


def allowed(module):
    below = [m for m in MODULE_RANK if MODULE_RANK[m] < MODULE_RANK[module]]
    return ", ".join([module] + below)


def read_tree(repo):
    files = {}
    for top in ("src", "include/xtrain", "tools"):
        for file in (repo / top).rglob("*"):
            if file.suffix in SOURCE_SUFFIXES and file.is_file():
                files[file.relative_to(repo).as_posix()] = file.read_text(errors="replace")
    return files


def self_test(files):
    """The check must be able to fail: plant a wrong-way include and look."""
    planted = dict(files)
    planted["src/core/blob.cpp"] += '\n#include "solvers/sgd_solver.hpp"\n'
    violations, _ = check(planted)
    return any("src/core/blob.cpp" in v and "core -> solvers" in v for v in violations)


def main():
    repo = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)
    files = read_tree(repo)
    if not self_test(files):
        print("check_include_graph.py: a planted core -> solvers include went unnoticed")
        return 1
    violations, stale = check(files)
    for message in violations + stale:
        print(message)
    if violations or stale:
        print(f"\n{len(violations) + len(stale)} problem(s) in the include graph; "
              "the table is in docs/architecture.md")
        return 1
    edges = sum(1 for text in files.values() for line in text.splitlines()
                if INCLUDE.match(line))
    print(f"include graph: {len(files)} files, {edges} includes, every one in the table "
          f"({len(TOOL_DEBT)} tool -> src edges and {len(PENDING_SRC_EDGES)} src edge(s) "
          "still allowed for now)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
