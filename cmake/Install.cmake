# cmake --install: tools in bin/, libxtrain, public and generated headers, and
# an exported package so that find_package(xtrain) gives xtrain::xtrain
# (and xtrain::reporting, the metrics file and HTML report).
include(CMakePackageConfigHelpers)

install(TARGETS xtrain xtrain_reporting EXPORT xtrainTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/xtrain
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${XTRAIN_PROTO_OUT}/xtrain.pb.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/xtrain/proto)
install(FILES ${CMAKE_SOURCE_DIR}/proto/xtrain.proto
  DESTINATION ${CMAKE_INSTALL_DATADIR}/xtrain/proto)

set(XTRAIN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/xtrain)
install(EXPORT xtrainTargets NAMESPACE xtrain:: DESTINATION ${XTRAIN_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/xtrainConfig.cmake.in
  ${CMAKE_BINARY_DIR}/xtrainConfig.cmake INSTALL_DESTINATION ${XTRAIN_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/xtrainConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/xtrainConfig.cmake
              ${CMAKE_BINARY_DIR}/xtrainConfigVersion.cmake
  DESTINATION ${XTRAIN_CMAKE_DIR})
