# arena's CMake module: arena_add_models(<target> <manifest> <board>)
#
#   list(APPEND CMAKE_MODULE_PATH "<python3 -c 'import arena_tool; print(arena_tool.cmake_dir())'>")
#   include(ArenaModels)
#   add_executable(firmware.elf startup.c main.c)
#   arena_add_models(firmware.elf app/arena.yaml nucleo_f746)
#
# At configure time `arena-tool generate --list` says what the board's build makes (no planning);
# at build time `arena-tool generate` runs as one custom command whose DEPFILE names every input it
# reads (manifest, board, models, a fragment's linker script, arena's own code), so it reruns
# exactly when one changes and a no-op build runs nothing; it re-plans only a model whose bytes or
# options changed and rewrites only the files whose bytes change, so only those recompile. The target gets the generated C tables
# and arena_board.c, arena's runtime (unless `runtime: none`), their include folders, the board's
# core flags, and links with arena's link flags (newlib-nano, -nostartfiles, --gc-sections), libm
# and arena's linker script (`linker: fragment`: the project's script, with -L to its folder and
# to the fragment's). A failed gate fails the build with arena's one line.
#
# ARENA_PYTHON: the Python that has arena_tool (default: the first python3 found). Paths in the
# outputs are relative to ARENA_PROJECT_DIR (default CMAKE_SOURCE_DIR), as SCons's are to its
# SConstruct's folder; outputs go to ${CMAKE_CURRENT_BINARY_DIR}/arena (ARENA_BUILD_DIR).

if(CMAKE_VERSION VERSION_LESS 3.20)
  message(FATAL_ERROR "arena: ArenaModels.cmake needs CMake 3.20 or newer (DEPFILE with every generator)")
endif()
get_filename_component(_ARENA_PACKAGE_ROOT "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)

function(arena_add_models target manifest board)
  if(NOT ARENA_PYTHON)
    find_package(Python3 COMPONENTS Interpreter REQUIRED)
    set(ARENA_PYTHON "${Python3_EXECUTABLE}")
  endif()
  if(NOT ARENA_PROJECT_DIR)
    set(ARENA_PROJECT_DIR "${CMAKE_SOURCE_DIR}")
  endif()
  if(NOT ARENA_BUILD_DIR)
    set(ARENA_BUILD_DIR "${CMAKE_CURRENT_BINARY_DIR}/arena")
  endif()
  get_filename_component(manifest "${manifest}" ABSOLUTE)
  set(tool "${CMAKE_COMMAND}" -E env "PYTHONPATH=${_ARENA_PACKAGE_ROOT}" "${ARENA_PYTHON}" -m arena_tool generate
      "${manifest}" --board "${board}" --out "${ARENA_BUILD_DIR}")
  execute_process(COMMAND ${tool} --list WORKING_DIRECTORY "${ARENA_PROJECT_DIR}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE listing ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(STRIP "${err}" err)
    message(FATAL_ERROR "${err}")
  endif()
  # the files the build makes follow the manifest (a model added, a board's linker changed)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${manifest}")
  foreach(key stamp output depfile source runtime include script libdir flag cflag link lib)
    set(${key} "")
  endforeach()
  string(REPLACE "\n" ";" lines "${listing}")
  foreach(line IN LISTS lines)
    if(line MATCHES "^([a-z]+)=(.*)$")
      list(APPEND ${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
    endif()
  endforeach()
  # the gate is the command's output, newer than every input after each run; the other files are
  # byproducts, rewritten only when their bytes change, so a touched model or an edited budget
  # recompiles no table (an OUTPUT CMake's Makefiles would touch after every run)
  list(REMOVE_ITEM output ${stamp})
  # DEPENDS the manifest too: an edit to it reconfigures, and CMake's Makefiles then build once
  # without the depfile's dependencies (they are read back after the build)
  add_custom_command(OUTPUT ${stamp}
                     BYPRODUCTS ${output}
                     COMMAND ${tool}
                     DEPENDS "${manifest}"
                     DEPFILE "${depfile}"
                     WORKING_DIRECTORY "${ARENA_PROJECT_DIR}"
                     COMMENT "arena: generating ${board}"
                     VERBATIM)
  set_source_files_properties(${source} ${runtime} PROPERTIES COMPILE_OPTIONS "${cflag}")
  target_sources(${target} PRIVATE ${stamp} ${source} ${runtime})
  target_include_directories(${target} PRIVATE ${include})
  target_compile_options(${target} PRIVATE ${flag})
  # -T by name, its folder a link directory: CMake escapes a '$' in a link option twice (the link
  # failed in a project path with '$'), a link directory once, as the generator reads it.
  get_filename_component(script_dir "${script}" DIRECTORY)
  get_filename_component(script_name "${script}" NAME)
  target_link_directories(${target} PRIVATE "${script_dir}" ${libdir})
  # SCons's link flags (newlib-nano, no start files, --gc-sections) and libm: without them the
  # link fails (undefined reference to _exit)
  target_link_options(${target} PRIVATE ${flag} ${link} "-T${script_name}")
  target_link_libraries(${target} PRIVATE ${lib})
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${script}")
endfunction()
