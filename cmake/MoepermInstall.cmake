# install() + an exported package, so find_package(moeperm CONFIG) works from the prefix.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# A static libmoeperm records its PRIVATE links as $<LINK_ONLY:...> in its interface, and
# CMake 3.25's export() then wants the $<BUILD_INTERFACE:...>-only warning and sanitizer
# targets in the export set too. Exporting them is harmless: nothing outside links them.
if(NOT BUILD_SHARED_LIBS)
  install(TARGETS moeperm_warnings moeperm_sanitizers EXPORT moepermTargets)
endif()
# The moeperm command (moeperm::cli) is part of the package when it is built (MOEPERM_BUILD_TOOLS).
set(moeperm_installed_targets moeperm)
if(TARGET moeperm_cli)
  list(APPEND moeperm_installed_targets moeperm_cli)
  # The installed command finds the installed library relative to itself (bin/../lib), so
  # it runs from any prefix without LD_LIBRARY_PATH.
  set_target_properties(moeperm_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
endif()
install(TARGETS ${moeperm_installed_targets} EXPORT moepermTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT moepermTargets NAMESPACE moeperm:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/moeperm)
export(EXPORT moepermTargets NAMESPACE moeperm:: FILE ${PROJECT_BINARY_DIR}/moepermTargets.cmake)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/moepermConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/moepermConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/moeperm)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/moepermConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/moepermConfig.cmake ${PROJECT_BINARY_DIR}/moepermConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/moeperm)
