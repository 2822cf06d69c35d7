# The install test: `cmake --install` this build into a fresh prefix, then configure,
# build and run examples/consumer against that prefix alone (find_package(tessel)).
# Run with -DBUILD_DIR= -DSOURCE_DIR= -DGENERATOR=.
set(work ${BUILD_DIR}/install-test)
file(REMOVE_RECURSE ${work})
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${work}/prefix)
run(${CMAKE_COMMAND} -G ${GENERATOR} -S ${SOURCE_DIR}/examples/consumer -B ${work}/build
    -DCMAKE_PREFIX_PATH=${work}/prefix -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${work}/build)
run(${work}/build/consumer)
# The installed CLI runs too, and says its version.
run(${work}/prefix/bin/tessel --version)
