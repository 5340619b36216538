# Installs sinkscope into a scratch prefix, then configures, builds and runs a consumer project that
# finds it with find_package(sinkscope): tests/consumer/main.cpp and README's example
# (examples/readme_example.cpp), which runs on MODEL when that file exists. Invoked by CTest as `cmake -P`.
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
endfunction()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/lib -DSINKSCOPE_BUILD_TESTS=OFF -DSINKSCOPE_BUILD_TOOLS=OFF
    -DSINKSCOPE_BUILD_BENCH=OFF -DSINKSCOPE_BUILD_EXPERIMENTS=OFF -DSINKSCOPE_CUDA=OFF -DCMAKE_INSTALL_PREFIX=${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${WORK_DIR}/lib)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer -B ${WORK_DIR}/app -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
    -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/app)
run(${WORK_DIR}/app/consumer)
if(DEFINED MODEL AND EXISTS "${MODEL}")
  run(${WORK_DIR}/app/readme_example ${MODEL})
  message(STATUS "README's example built against the installed sinkscope and ran on ${MODEL}")
else()
  message(STATUS "README's example built against the installed sinkscope; not run (no model at '${MODEL}': scripts/fetch_model.sh)")
endif()
message(STATUS "consumer built against the installed sinkscope and ran")
