# The test helper of tests/CMakeLists.txt, also used by the GPU-checks-only build
# (DAYZERO_GPU_CHECKS_ONLY in the top-level CMakeLists.txt).
# dayzero_add_test(NAME SOURCES... LIBS ... [LABELS label]): one test executable, each
# TEST() registered with CTest on its own (and labelled, e.g. `slow`).
function(dayzero_add_test name)
  cmake_parse_arguments(ARG "" "LABELS" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main dayzero_warnings)
  target_compile_definitions(${name} PRIVATE DAYZERO_DATA_DIR="${DAYZERO_DATA_DIR}"
                             DAYZERO_FIXTURES_DIR="${PROJECT_SOURCE_DIR}/tests/fixtures")
  if(ARG_LABELS)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS ${ARG_LABELS})
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
  endif()
endfunction()
