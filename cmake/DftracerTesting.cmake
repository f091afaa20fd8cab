# dftracer_gtest(): one GoogleTest binary beside the code it tests.
#
#   dftracer_gtest(core_recording_test
#     SOURCES recording_test.cc
#     LIBS dftracer::core dftracer_test_support
#     PREFIX "core." LABEL core [TIMEOUT 300] [DISCOVERY_TIMEOUT 60])
#
# Every TEST runs in its own process under ctest (gtest_discover_tests), so
# each starts with a fresh tracing session. Does nothing unless
# DFTRACER_BUILD_TESTS is on, so component CMakeLists can call it freely.
function(dftracer_gtest target)
  if(NOT DFTRACER_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(T "" "PREFIX;LABEL;TIMEOUT;DISCOVERY_TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  if(NOT T_DISCOVERY_TIMEOUT)
    set(T_DISCOVERY_TIMEOUT 60)
  endif()
  add_executable(${target} ${T_SOURCES})
  target_link_libraries(${target} PRIVATE ${T_LIBS} GTest::gtest_main)
  gtest_discover_tests(${target}
    TEST_PREFIX "${T_PREFIX}"
    DISCOVERY_TIMEOUT ${T_DISCOVERY_TIMEOUT}
    PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS ${T_LABEL})
endfunction()
