# FindCLP: COIN-OR CLP, the linear-programming solver of `trainsim schedule` (docs/schedule.md).
# Debian's coinor-libclp-dev ships a pkg-config file (clp.pc) but no CMake package, so this module
# asks pkg-config and wraps the result in an imported target.
#
# Result: CLP_FOUND, CLP_VERSION and the target CLP::CLP (include directories and libraries).
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_CLP QUIET IMPORTED_TARGET clp)
endif()
set(CLP_VERSION ${PC_CLP_VERSION})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CLP REQUIRED_VARS PC_CLP_FOUND VERSION_VAR CLP_VERSION
                                  REASON_FAILURE_MESSAGE "install coinor-libclp-dev (scripts/setup.sh)")
if(CLP_FOUND AND NOT TARGET CLP::CLP)
  add_library(CLP::CLP INTERFACE IMPORTED)
  target_link_libraries(CLP::CLP INTERFACE PkgConfig::PC_CLP)
endif()
