# make install: headers, the layer libraries, a CMake package (find_package(rankflow) ->
# rankflow::rankflow) and a pkg-config file (rankflow.pc).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(DIRECTORY include/rankflow DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS rankflow rankflow_runtime rankflow_api rankflow_collectives rankflow_transport
                rankflow_common
        EXPORT rankflowTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT rankflowTargets NAMESPACE rankflow::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rankflow)
configure_package_config_file(cmake/rankflowConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/rankflowConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rankflow)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/rankflowConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/rankflowConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/rankflowConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rankflow)
configure_file(cmake/rankflow.pc.in ${CMAKE_CURRENT_BINARY_DIR}/rankflow.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/rankflow.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
