# dftracer_find_torch(<out_var>): finds the LibTorch that ships inside the
# torch wheel of the Python interpreter (torch.utils.cmake_prefix_path), so
# the observer is built against exactly the torch that `import torch` loads.
# Never installs or downloads anything: a build environment without torch
# (an isolated pip build) simply has none.
#
# Honours DFTRACER_TORCH: OFF skips, AUTO builds when torch imports, ON fails
# the configure when it does not. Sets <out_var> TRUE when Torch was found;
# the imported targets are GLOBAL so tests/examples can link them.
function(dftracer_find_torch out_var)
  set(${out_var} FALSE PARENT_SCOPE)
  string(TOUPPER "${DFTRACER_TORCH}" _mode)
  if(_mode STREQUAL "OFF")
    message(STATUS "dftracer: LibTorch observer not built (DFTRACER_TORCH=OFF)")
    return()
  endif()
  if(NOT _mode STREQUAL "ON" AND NOT _mode STREQUAL "AUTO")
    message(FATAL_ERROR "DFTRACER_TORCH must be ON, OFF or AUTO, not '${DFTRACER_TORCH}'")
  endif()
  if(TARGET torch)
    set(${out_var} TRUE PARENT_SCOPE)
    return()
  endif()

  if(NOT Python_EXECUTABLE)
    find_package(Python 3.8 COMPONENTS Interpreter QUIET)
  endif()
  set(_why "")
  if(NOT Python_EXECUTABLE)
    set(_why "no Python interpreter found")
  else()
    execute_process(
      COMMAND "${Python_EXECUTABLE}" -c "import torch, torch.utils; print(torch.utils.cmake_prefix_path); print(torch.__version__); print(torch.version.cuda or '')"
      RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err
      OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT _rc EQUAL 0)
      set(_why "`${Python_EXECUTABLE} -c 'import torch'` failed")
    endif()
  endif()
  if(NOT _why STREQUAL "")
    if(_mode STREQUAL "ON")
      message(FATAL_ERROR "DFTRACER_TORCH=ON but ${_why}")
    endif()
    message(STATUS "dftracer: LibTorch observer not built (${_why})")
    return()
  endif()

  string(REPLACE "\n" ";" _lines "${_out}")
  list(GET _lines 0 _prefix)
  list(GET _lines 1 _version)
  list(LENGTH _lines _n)
  set(_cuda "")
  if(_n GREATER 2)
    list(GET _lines 2 _cuda)
  endif()
  # A CUDA wheel's Caffe2 config enables the CUDA language and looks for a CUDA
  # toolkit (nvcc, cudart, nvrtc), failing the configure where there is none
  # (pip's nvidia wheels ship no nvcc). The observer uses no CUDA API: an empty
  # torch::cudart makes that part (Caffe2/public/cuda.cmake) return at its
  # include guard; libtorch_cuda and libc10_cuda are still linked by path, and
  # `import torch` has loaded what they need.
  if(NOT _cuda STREQUAL "" AND NOT TARGET torch::cudart)
    add_library(torch::cudart INTERFACE IMPORTED GLOBAL)
    message(STATUS "dftracer: torch ${_version} is a CUDA ${_cuda} build; its CUDA toolkit part is not looked for")
  endif()
  # Caffe2's config looks for CUDA/kineto/MKL pieces a CPU wheel lacks; its
  # warnings are harmless.
  list(APPEND CMAKE_PREFIX_PATH "${_prefix}")
  find_package(Torch CONFIG GLOBAL QUIET)
  if(NOT Torch_FOUND)
    if(_mode STREQUAL "ON")
      message(FATAL_ERROR "DFTRACER_TORCH=ON but TorchConfig.cmake under ${_prefix} did not load")
    endif()
    message(STATUS "dftracer: LibTorch observer not built (TorchConfig.cmake under ${_prefix} did not load)")
    return()
  endif()
  get_filename_component(_libdir "${TORCH_LIBRARY}" DIRECTORY)
  set(DFTRACER_TORCH_LIBRARIES "${TORCH_LIBRARIES}" CACHE INTERNAL "LibTorch libraries")
  set(DFTRACER_TORCH_LIB_DIR "${_libdir}" CACHE INTERNAL "LibTorch library folder")
  set(DFTRACER_TORCH_VERSION "${_version}" CACHE INTERNAL "torch version built against")
  message(STATUS "dftracer: LibTorch observer built against torch ${_version} (${_libdir})")
  set(${out_var} TRUE PARENT_SCOPE)
endfunction()
