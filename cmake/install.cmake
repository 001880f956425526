# `cmake --install`: the programs, their man pages, the data
# (share/hookscope: sample traces, icons), the desktop entry and icon, all in
# the component `hookscope`, in Debian's layout (GNUInstallDirs). The torch
# bridge is the component `torch_bridge` (python/CMakeLists.txt); the .deb
# packages are made from the two in cmake/package.cmake.
include(GNUInstallDirs)

install(TARGETS hookscope-cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT hookscope)
set(man_programs hookscope-cli)
if(TARGET hookscope)
  install(TARGETS hookscope RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT hookscope)
  list(APPEND man_programs hookscope)
endif()

install(DIRECTORY ${HOOKSCOPE_DATA_DIR}/ DESTINATION ${CMAKE_INSTALL_DATADIR}/hookscope COMPONENT hookscope)
install(FILES ${CMAKE_SOURCE_DIR}/assets/hookscope.desktop
        DESTINATION ${CMAKE_INSTALL_DATADIR}/applications COMPONENT hookscope)
foreach(size 256 48)
  install(FILES ${CMAKE_SOURCE_DIR}/assets/icons/hookscope-${size}.png
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/${size}x${size}/apps
          RENAME hookscope.png COMPONENT hookscope)
endforeach()

# A man page per program, made from its --help by help2man (Debian package
# help2man; without it the pages are left out, with a message).
find_program(HELP2MAN_EXECUTABLE help2man)
if(HELP2MAN_EXECUTABLE)
  set(man_pages)
  set(help_option_hookscope-cli --help-all)  # every verb's options
  set(help_option_hookscope --help)
  set(summary_hookscope-cli "record and inspect autograd/DDP hook traces headless")
  set(summary_hookscope "visual debugger for autograd graphs, hooks and DDP Reducers")
  foreach(program IN LISTS man_programs)
    set(page ${CMAKE_BINARY_DIR}/man/${program}.1)
    add_custom_command(
      OUTPUT ${page}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
      COMMAND ${HELP2MAN_EXECUTABLE} --no-info --no-discard-stderr
              --version-string=${PROJECT_VERSION} --help-option=${help_option_${program}}
              --name=${summary_${program}} --output=${page} $<TARGET_FILE:${program}>
      DEPENDS ${program}
      COMMENT "Man page ${program}.1 from its --help (help2man)"
      VERBATIM)
    list(APPEND man_pages ${page})
  endforeach()
  add_custom_target(hookscope_man_pages ALL DEPENDS ${man_pages})
  install(FILES ${man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT hookscope)
else()
  message(STATUS "hookscope: help2man not found; no man pages (scripts/setup.sh installs it)")
endif()
