# XTRAIN_BUILD_FUZZERS: the whole library is compiled with libFuzzer's
# coverage instrumentation and AddressSanitizer + UndefinedBehaviorSanitizer,
# so a fuzz target (fuzz/) sees memory errors and undefined behaviour inside
# the parsers it drives, not only in its own few lines. Only clang has
# libFuzzer; the CUDA backend is left out (the parsers are host code, and
# nvcc does not take these flags). scripts/fuzz.sh configures such a build.
if(NOT XTRAIN_BUILD_FUZZERS)
  return()
endif()
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR
    "XTRAIN_BUILD_FUZZERS needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: "
    "configure a separate build folder with CC=clang CXX=clang++ (scripts/fuzz.sh does).")
endif()
if(XTRAIN_USE_CUDA STREQUAL "ON")
  message(FATAL_ERROR "XTRAIN_BUILD_FUZZERS builds the CPU-only library: use -DXTRAIN_USE_CUDA=OFF.")
endif()
set(XTRAIN_USE_CUDA OFF CACHE STRING "" FORCE)
# -fno-sanitize-recover: undefined behaviour stops the run like a crash, so
# libFuzzer keeps the input; otherwise UBSan prints and fuzzing goes on.
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                    -fno-omit-frame-pointer -g)
add_link_options(-fsanitize=address,undefined)
message(STATUS "Fuzzing build: libFuzzer instrumentation, ASan and UBSan; CPU only")
