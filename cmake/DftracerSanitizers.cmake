# DFTRACER_SANITIZE=address -> ASan + UBSan; thread -> TSan. Applied to every
# target of the build so the core, the tests and the examples agree.
if(DFTRACER_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(DFTRACER_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT DFTRACER_SANITIZE STREQUAL "")
  message(FATAL_ERROR "DFTRACER_SANITIZE must be '', 'address' or 'thread', not '${DFTRACER_SANITIZE}'")
endif()
