# FindCUPTI: CUPTI's headers and library, for the CUDA capture source.
#
# Looks in CUPTI_ROOT, CUDAToolkit_ROOT ($CUPTI_ROOT), then in the NVIDIA
# wheels of the Python that builds us (site-packages/nvidia/cu13 for CUDA 13,
# nvidia/cuda_cupti and nvidia/cuda_runtime for CUDA 12; torch depends on them
# and ship both), then $CUDA_HOME and /usr/local/cuda (with extras/CUPTI).
# The wheels come before a system toolkit: libtorch_cpu loads the wheel's
# libcupti.so.13, which then serves ours by soname, so its headers are the
# ones that match. The first of these places that holds a library wins
# (NAMES_PER_DIR: the wheels ship only libcupti.so.13, which must not lose to
# another place's unversioned libcupti.so).
# Sets CUPTI_FOUND, CUPTI_INCLUDE_DIRS (cupti.h and cuda.h) and CUPTI_LIBRARY.
set(_cupti_hints ${CUPTI_ROOT} ${CUDAToolkit_ROOT} $ENV{CUPTI_ROOT})
if(NOT Python_EXECUTABLE)
  find_package(Python 3.8 COMPONENTS Interpreter QUIET)
endif()
if(Python_EXECUTABLE)
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c "import nvidia; print(';'.join(nvidia.__path__))"
    OUTPUT_VARIABLE _nvidia_dirs OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0)
    foreach(d ${_nvidia_dirs})
      list(APPEND _cupti_hints ${d}/cu13 ${d}/cuda_cupti ${d}/cuda_runtime)
    endforeach()
  endif()
endif()
list(APPEND _cupti_hints $ENV{CUDA_HOME} /usr/local/cuda)
find_path(CUPTI_INCLUDE_DIR cupti.h HINTS ${_cupti_hints} PATH_SUFFIXES include extras/CUPTI/include NO_CACHE)
find_path(CUPTI_CUDA_INCLUDE_DIR cuda.h HINTS ${_cupti_hints} PATH_SUFFIXES include NO_CACHE)
find_library(CUPTI_LIBRARY NAMES cupti libcupti.so.13 libcupti.so.12 NAMES_PER_DIR
             HINTS ${_cupti_hints} PATH_SUFFIXES lib lib64 extras/CUPTI/lib64 NO_CACHE)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CUPTI REQUIRED_VARS CUPTI_INCLUDE_DIR CUPTI_CUDA_INCLUDE_DIR CUPTI_LIBRARY)
set(CUPTI_INCLUDE_DIRS ${CUPTI_INCLUDE_DIR} ${CUPTI_CUDA_INCLUDE_DIR})
