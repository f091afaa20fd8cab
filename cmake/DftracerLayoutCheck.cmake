# The stages' dependency rule: the writer's side (src/core, src/file) and the
# shared format (src/format) include nothing from the analyzer (src/analyze),
# and their CMakeLists put nothing of it on an include path or in a source
# list. What writer and reader must agree on lives in src/format.
#
# Run at configure time (included from the top CMakeLists.txt: a violation
# stops the configure) and as the ctest `layout.writer_does_not_include_analyzer`
# (cmake -DDFTRACER_SOURCE_DIR=<repo> -P this file), so a file added after
# configuring fails the suite too.
if(NOT DFTRACER_SOURCE_DIR)
  set(DFTRACER_SOURCE_DIR ${PROJECT_SOURCE_DIR})
endif()

function(dftracer_check_layout root)
  # Every header the analyzer has, by file name and by its path under src/analyze.
  file(GLOB_RECURSE _analyze_files RELATIVE ${root}/src/analyze ${root}/src/analyze/*.h ${root}/src/analyze/*.hpp)
  set(_analyze_names "")
  foreach(_f IN LISTS _analyze_files)
    get_filename_component(_n ${_f} NAME)
    list(APPEND _analyze_names ${_n} ${_f})
  endforeach()
  set(_problems "")
  foreach(_dir core file format)
    file(GLOB_RECURSE _sources ${root}/src/${_dir}/*.h ${root}/src/${_dir}/*.hpp ${root}/src/${_dir}/*.c
         ${root}/src/${_dir}/*.cc ${root}/src/${_dir}/*.cpp)
    foreach(_src IN LISTS _sources)
      get_filename_component(_src_dir ${_src} DIRECTORY)
      file(STRINGS ${_src} _includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
      foreach(_line IN LISTS _includes)
        string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" _inc "${_line}")
        # A header of the stage's own folders (or the public include/) is theirs
        # even when the analyzer has one of the same name.
        set(_own FALSE)
        foreach(_d ${_src_dir} ${root}/src/core ${root}/src/file ${root}/src/format ${root}/include)
          if(EXISTS ${_d}/${_inc})
            set(_own TRUE)
          endif()
        endforeach()
        if(_inc MATCHES "(^|/)analyze/" OR (NOT _own AND _inc IN_LIST _analyze_names))
          file(RELATIVE_PATH _rel ${root} ${_src})
          list(APPEND _problems "${_rel} includes \"${_inc}\" (the analyzer's)")
        endif()
      endforeach()
    endforeach()
    if(EXISTS ${root}/src/${_dir}/CMakeLists.txt)
      file(STRINGS ${root}/src/${_dir}/CMakeLists.txt _uses REGEX "src/analyze")
      foreach(_line IN LISTS _uses)
        if(NOT _line MATCHES "^[ \t]*#")
          list(APPEND _problems "src/${_dir}/CMakeLists.txt uses src/analyze: ${_line}")
        endif()
      endforeach()
    endif()
  endforeach()
  if(_problems)
    list(JOIN _problems "\n  " _text)
    message(FATAL_ERROR "the writer's side depends on the analyzer (put what both need in src/format):\n  ${_text}")
  endif()
endfunction()

dftracer_check_layout(${DFTRACER_SOURCE_DIR})
