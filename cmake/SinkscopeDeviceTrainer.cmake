# sinkscope_add_device_trainer(<target>): gives a program that trains train::make_device_trainer
# (train/run_trainer.hpp: cuda::HostedTrainer on CUDA device 0) when the build has CUDA, by linking the
# one CUDA unit tools/device_trainer.cu and defining SINKSCOPE_DEVICE_TRAINER for every unit. Without
# CUDA (or under the sanitizers, which the CUDA runtime does not mix with; tests/cuda/CMakeLists.txt)
# it does nothing, and make_device_trainer is the stub that says how to get a CUDA build.
#
# The unit is compiled once, as the object library sinkscope_device_trainer_objects, and linked into every
# program that asks (sinkscope-train and sinkscope-experiments): nvcc takes about 50 s of CPU for it, which
# CI paid twice before. Its host code (the trace, the checkpoint writer, Eigen) is inline code the C++
# units instantiate too, so it is compiled with their host flags — the same -march (Eigen's alignment) and
# OpenMP — or the linker could keep two builds of one function; it sees only the INTERFACE library's
# definitions, so a program's own definitions must not change code it shares with this unit.
function(sinkscope_add_device_trainer target)
  if(NOT SINKSCOPE_CUDA OR SINKSCOPE_SANITIZE)
    return()
  endif()
  if(NOT TARGET sinkscope_device_trainer_objects)
    add_library(sinkscope_device_trainer_objects OBJECT ${PROJECT_SOURCE_DIR}/tools/device_trainer.cu)
    target_link_libraries(sinkscope_device_trainer_objects PRIVATE sinkscope::sinkscope CUDA::cudart CUDA::cublas)
    target_compile_definitions(sinkscope_device_trainer_objects PRIVATE SINKSCOPE_DEVICE_TRAINER EIGEN_NO_CUDA)
    set(host_flags "")
    if(SINKSCOPE_NATIVE)
      list(APPEND host_flags -march=native)
    endif()
    if(OpenMP_CXX_FOUND)
      list(APPEND host_flags ${OpenMP_CXX_FLAGS})
    endif()
    # -Wno-*uninitialized: GCC's AVX-512 intrinsic headers, which lose their system-header status in
    # nvcc's host pass.
    list(APPEND host_flags -Wall -Wextra -Wno-unknown-pragmas -Wno-uninitialized -Wno-maybe-uninitialized)
    list(JOIN host_flags "," host_flags)
    target_compile_options(sinkscope_device_trainer_objects PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${host_flags}>)
    set_target_properties(sinkscope_device_trainer_objects PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
  endif()
  target_sources(${target} PRIVATE $<TARGET_OBJECTS:sinkscope_device_trainer_objects>)
  target_compile_definitions(${target} PRIVATE SINKSCOPE_DEVICE_TRAINER EIGEN_NO_CUDA)
  target_link_libraries(${target} PRIVATE CUDA::cudart CUDA::cublas)
endfunction()
