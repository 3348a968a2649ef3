# Install rules and a package config, so that a consumer's find_package(zklock) gives zklock::zklock.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS zklock zklock_testing EXPORT zklockTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES cmake/FindZooKeeperST.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/zklock)
install(EXPORT zklockTargets NAMESPACE zklock:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/zklock)

configure_package_config_file(cmake/zklockConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/zklockConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/zklock)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/zklockConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/zklockConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/zklockConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/zklock)
