# The CUDA backend: on when nvcc and cuDNN are found (XTRAIN_USE_CUDA=AUTO),
# forced with ON, skipped with OFF. The CPU-only build needs none of this.

set(XTRAIN_HAVE_CUDA OFF)
if(NOT XTRAIN_USE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    find_package(CUDAToolkit)
  endif()
  if(CUDAToolkit_FOUND)
    find_library(XTRAIN_CUDNN_LIBRARY cudnn
      HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib)
    find_path(XTRAIN_CUDNN_INCLUDE_DIR cudnn.h
      HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}/include)
    find_library(XTRAIN_NCCL_LIBRARY nccl
      HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib)
  endif()
  if(CUDAToolkit_FOUND AND XTRAIN_CUDNN_LIBRARY AND XTRAIN_CUDNN_INCLUDE_DIR)
    set(XTRAIN_HAVE_CUDA ON)
  elseif(XTRAIN_USE_CUDA STREQUAL "ON")
    message(FATAL_ERROR
      "XTRAIN_USE_CUDA=ON but the CUDA toolkit (nvcc) or cuDNN was not found. "
      "Install them or configure with -DXTRAIN_USE_CUDA=OFF.")
  endif()
endif()

if(XTRAIN_HAVE_CUDA)
  # CUDA 13 dropped sm_70: Turing, Ampere and Hopper by default; CI builds one.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "75;80;90")
  endif()
  # One CUDA runtime, the shared one (as CUDA::cudart below): nvcc's default
  # would also link the static runtime into libxtrain, and the shared one is
  # what a GPU machine's toolkit (or a preloaded stand-in, in the tests)
  # provides.
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  message(STATUS "xtrain: CUDA backend ON (archs ${CMAKE_CUDA_ARCHITECTURES}, "
                 "cuDNN ${XTRAIN_CUDNN_LIBRARY})")
else()
  message(STATUS "xtrain: CUDA backend OFF (CPU-only build)")
endif()

# Adds the CUDA sources and libraries to TARGET (the library's objects) when
# the backend is on; LIBRARY (libxtrain) tells its users XTRAIN_USE_CUDA too.
function(xtrain_add_cuda_backend target library)
  if(NOT XTRAIN_HAVE_CUDA)
    return()
  endif()
  # src/cuda: the CUDA runtime; each module's GPU code sits beside its CPU
  # code (feature first): its .cu files and its *_cuda.cpp files (host code
  # that needs the CUDA libraries, such as the cuDNN convolution), which the
  # CPU-only build leaves out.
  file(GLOB cuda_sources CONFIGURE_DEPENDS
       ${CMAKE_SOURCE_DIR}/src/cuda/*.cu ${CMAKE_SOURCE_DIR}/src/cuda/*.cpp
       ${CMAKE_SOURCE_DIR}/src/*/*.cu ${CMAKE_SOURCE_DIR}/src/*/*_cuda.cpp)
  list(REMOVE_DUPLICATES cuda_sources)
  target_sources(${target} PRIVATE ${cuda_sources})
  target_compile_definitions(${target} PUBLIC XTRAIN_USE_CUDA)
  target_compile_definitions(${library} PUBLIC XTRAIN_USE_CUDA)
  target_include_directories(${target} SYSTEM PRIVATE ${XTRAIN_CUDNN_INCLUDE_DIR})
  # The runtime only: linking libcuda directly would bind to the driver stub.
  target_link_libraries(${target} PRIVATE CUDA::cudart CUDA::cublas
                        ${XTRAIN_CUDNN_LIBRARY})
  if(XTRAIN_NCCL_LIBRARY)
    target_compile_definitions(${target} PRIVATE XTRAIN_HAVE_NCCL)
    target_link_libraries(${target} PRIVATE ${XTRAIN_NCCL_LIBRARY})
  endif()
  set_target_properties(${target} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)
endfunction()
