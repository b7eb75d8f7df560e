# Install rules and the CMake package: `cmake --install build --prefix P` puts the
# headers under P/include/kiln/, the libraries under P/lib/, the `kiln` tool under
# P/bin/ and KilnConfig.cmake under P/lib/cmake/Kiln/, so that another project's
#   find_package(Kiln)  target_link_libraries(app PRIVATE kiln::kiln)
# works. Every path in the exported files is relative to the prefix.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KILN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)

# The umbrella header, and every header it can reach (the sources include them as
# "ir/graph.h", so the folders keep their names under include/kiln/).
install(FILES include/kiln/kiln.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln)
foreach(folder ir passes codegen runtime frontend baselines)
  install(DIRECTORY ${folder}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln/${folder}
          FILES_MATCHING PATTERN "*.h" PATTERN "*.def")
endforeach()

set(kiln_installed_targets kiln_ir kiln)
if(TARGET kiln_cli)
  set_target_properties(kiln_cli PROPERTIES EXPORT_NAME cli)
  list(APPEND kiln_installed_targets kiln_cli)
endif()
install(TARGETS ${kiln_installed_targets} EXPORT KilnTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT KilnTargets NAMESPACE kiln:: DESTINATION ${KILN_CMAKE_DIR})

configure_package_config_file(cmake/KilnConfig.cmake.in ${PROJECT_BINARY_DIR}/KilnConfig.cmake
                              INSTALL_DESTINATION ${KILN_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/KilnConfig.cmake ${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake
        DESTINATION ${KILN_CMAKE_DIR})
