#!/usr/bin/env python3
"""The shared libraries of the GPU bundle (scripts/gpu_bundle.sh).

Given the bundle's executables and libxtrain, copies into LIB_DIR every
library they load at run time, except those the GPU machine provides itself:
glibc (the loader, libc, libm, ...) and the CUDA libraries (the driver,
cudart, cuBLAS, cuDNN, NCCL), which it has in its toolkit and Python wheels.
Each copied library and executable gets the RUNPATH $ORIGIN (resp.
$ORIGIN/../lib), so the bundle finds its own libraries wherever it is
unpacked, with no LD_LIBRARY_PATH.

Stand-ins. Some libraries are NEEDED by one we use but never called on the
paths the bundle runs: OpenCV's imgcodecs links GDAL and GDCM (GIS rasters
and DICOM, read only when asked for), its core links GLX (OpenGL interop) and
LAPACK (OpenBLAS exports LAPACK too), HDF5 links libcurl and libcrypto (its
S3 driver). With what they pull in they are more than half of the closure
(~150 MB of ~270). For each, a stand-in with the same soname is built instead: it
defines exactly the symbols the carried objects import from the real one
(same symbol versions; data objects of the same size, zero-filled), and each
function prints which library was left out and which function was called,
then aborts (but for NO_OPS below, which return 0). A path that does need the
library fails with that line instead of a wrong result. Symbols a carried object defines itself are not defined
again, so no stand-in interposes on anything carried.

Last, the closure is checked: every non-weak symbol a carried object imports
must be defined by a carried object, a stand-in, or a library the machine
provides; missing ones are listed and the exit status is 1.

usage: gpu_bundle_libs.py LIB_DIR EXECUTABLE... (libxtrain among them)
"""
import collections
import os
import re
import shutil
import subprocess
import sys

# Sonames the GPU machine provides: glibc's libraries, the CUDA ones.
PROVIDED = re.compile(
    r"^(ld-linux-x86-64\.so\.2|lib(c|m|mvec|pthread|dl|rt|resolv|util|anl|nsl)\.so\.\d+"
    r"|lib(cuda|cudart|cublas|cublasLt|cudnn[a-z_]*|nccl|nvrtc[a-z-]*|nvJitLink)\.so\.\d+)$")

# Libraries replaced by stand-ins (see above), by soname; a caller may add
# more with XTRAIN_EXTRA_STAND_INS, a regular expression of library names
# (scripts/build_wheel.sh: libevent, which only Open MPI's run-time calls,
# under mpirun).
STAND_INS = re.compile(
    r"^lib(gdal|gdcm[A-Za-z]*|curl(-gnutls)?|GLX|crypto|lapack%s)\.so\.[\d.]+$" %
    ("|" + os.environ["XTRAIN_EXTRA_STAND_INS"] if os.environ.get("XTRAIN_EXTRA_STAND_INS")
     else ""))

# Stand-in functions that return (0) instead of aborting: called on paths the
# bundle does run, harmless to skip.
NO_OPS = {
    # OpenCV's image codecs register GDAL's drivers when they start (the first
    # imread, imdecode or imwrite); with none registered, GDAL is never used.
    "GDALAllRegister",
}

Symbol = collections.namedtuple("Symbol", "name version kind size bind")


def run(*command):
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def needed(path):
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", run("readelf", "-d", path))


def soname(path):
    match = re.search(r"\(SONAME\)\s+Library soname: \[(.+?)\]", run("readelf", "-d", path))
    return match.group(1) if match else os.path.basename(path)


def loader_paths(executables):
    """soname -> path, as the loader resolves them here."""
    paths = {}
    for exe in executables:
        for line in run("ldd", exe).splitlines():
            match = re.match(r"\s*(\S+) => (/\S+)", line)
            loader = re.match(r"\s*(/\S+/(ld-linux\S*)) \(0x", line)
            if match:
                paths.setdefault(match.group(1), match.group(2))
            elif loader:
                paths.setdefault(loader.group(2), loader.group(1))
            elif "not found" in line:
                sys.exit("gpu_bundle_libs.py: %s: %s" % (exe, line.strip()))
    return paths


def closure(executables, paths):
    """(carried, stand_ins, provided): soname -> path, following NEEDED."""
    carried, stand_ins, provided = {}, {}, {}
    unvisited = list(executables)
    while unvisited:
        for name in needed(unvisited.pop()):
            if name in carried or name in stand_ins or name in provided:
                continue
            if name not in paths:
                sys.exit("gpu_bundle_libs.py: ldd did not resolve %s" % name)
            if PROVIDED.match(name):
                provided[name] = paths[name]
            elif STAND_INS.match(name):
                stand_ins[name] = paths[name]
            else:
                carried[name] = paths[name]
                unvisited.append(paths[name])
    return carried, stand_ins, provided


def dynamic_symbols(path):
    """(defined, undefined) dynamic symbols of an ELF object."""
    defined, undefined = [], []
    for line in run("readelf", "--dyn-syms", "--wide", path).splitlines():
        fields = line.split()
        if len(fields) < 8 or not fields[0].rstrip(":").isdigit():
            continue
        _, _, size, kind, bind, _, section, full = fields[:8]
        if kind in ("SECTION", "FILE"):
            continue
        name, _, version = full.partition("@")
        symbol = Symbol(name, version.lstrip("@") or None, kind, int(size, 0), bind)
        if section == "UND":
            undefined.append(symbol)
        elif section != "ABS":  # the ABS ones name the version nodes
            defined.append(symbol)
    return defined, undefined


def c_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def build_stand_in(name, real_path, wanted, lib_dir):
    """Writes lib_dir/name defining `wanted` ((symbol, version) pairs)."""
    real = {}
    for symbol in dynamic_symbols(real_path)[0]:
        real.setdefault(symbol.name, symbol)
    lines = [
        "/* Stand-in for %s, written by scripts/gpu_bundle_libs.py. */" % name,
        "#include <stdio.h>",
        "#include <stdlib.h>",
        "static void left_out(const char* symbol) {",
        '  fprintf(stderr, "xtrain GPU bundle: %s was left out of the bundle (a stand-in holds '
        'its place), but %%s was called; use a full build of xtrain for this\\n", symbol);' % name,
        "  abort();",
        "}",
    ]
    by_version = collections.defaultdict(list)
    for index, (symbol, version) in enumerate(sorted(wanted, key=lambda w: (w[0], w[1] or ""))):
        info = real[symbol]
        label = c_string(symbol)
        if info.kind == "TLS":
            lines.append("__thread char tls_%d[%d] __asm__(%s);" % (index, max(info.size, 1), label))
        elif info.kind == "OBJECT" or (info.kind == "NOTYPE" and info.size > 0):
            lines.append("__attribute__((aligned(16))) char object_%d[%d] __asm__(%s);" %
                         (index, max(info.size, 1), label))
        elif symbol in NO_OPS:
            lines.append("long function_%d(void) __asm__(%s);" % (index, label))
            lines.append("long function_%d(void) { return 0; }" % index)
        else:  # FUNC, IFUNC
            lines.append("void function_%d(void) __asm__(%s);" % (index, label))
            lines.append("void function_%d(void) { left_out(%s); }" % (index, label))
        by_version[version].append(symbol)
    work = os.path.join(lib_dir, ".stand-in-" + name)
    os.makedirs(work, exist_ok=True)
    source = os.path.join(work, "stand_in.c")
    with open(source, "w") as f:
        f.write("\n".join(lines) + "\n")
    command = ["gcc", "-shared", "-fPIC", "-O1", "-o", os.path.join(lib_dir, name), source,
               "-Wl,-soname," + name]
    versions = sorted(v for v in by_version if v)
    if versions:
        # Unversioned imports bind to any version; they go into the first node.
        script = os.path.join(work, "versions.map")
        with open(script, "w") as f:
            for i, version in enumerate(versions):
                symbols = by_version[version] + (by_version[None] if i == 0 else [])
                f.write("%s {\n  global:\n%s" % (version, "".join("    %s;\n" % s for s in symbols)))
                f.write("  local:\n    *;\n};\n" if i == len(versions) - 1 else "};\n")
        command.append("-Wl,--version-script=" + script)
    subprocess.run(command, check=True)
    shutil.rmtree(work)
    return len(wanted)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.split("\n\n")[-1])
    lib_dir, executables = sys.argv[1], sys.argv[2:]
    os.makedirs(lib_dir, exist_ok=True)
    paths = loader_paths(executables)
    carried, stand_ins, provided = closure(executables, paths)

    for name, path in sorted(carried.items()):
        target = os.path.join(lib_dir, name)
        shutil.copyfile(path, target)
        os.chmod(target, 0o755)
        subprocess.run(["patchelf", "--set-rpath", "$ORIGIN", target], check=True)
        print("carried   %-34s %9d  %s" % (name, os.path.getsize(target), path))

    kept = executables + [os.path.join(lib_dir, n) for n in carried]
    kept_defined, imports = set(), set()
    for path in kept:
        defined, undefined = dynamic_symbols(path)
        kept_defined.update(s.name for s in defined)
        imports.update((s.name, s.version) for s in undefined if s.bind != "WEAK")
    provided_defined = set()
    for path in provided.values():
        provided_defined.update(s.name for s in dynamic_symbols(path)[0])

    stood_in = set()
    for name, path in sorted(stand_ins.items()):
        real = {s.name for s in dynamic_symbols(path)[0]}
        wanted = {(n, v) for n, v in imports
                  if n in real and n not in kept_defined and n not in provided_defined}
        count = build_stand_in(name, path, wanted, lib_dir)
        stood_in.update(n for n, _ in wanted)
        print("stand-in  %-34s %9d  (%d symbols of %s)" %
              (name, os.path.getsize(os.path.join(lib_dir, name)), count, path))
    for name, path in sorted(provided.items()):
        print("provided  %-34s            (the GPU machine's: %s here)" % (name, path))

    missing = sorted({n for n, _ in imports} - kept_defined - provided_defined - stood_in)
    if missing:
        print("gpu_bundle_libs.py: %d imported symbols are defined by no carried, stand-in or "
              "provided library:" % len(missing), file=sys.stderr)
        for name in missing[:40]:
            print("  " + name, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
