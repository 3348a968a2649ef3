# Finds the single-threaded ZooKeeper C client (Debian: libzookeeper-st-dev), which ships no CMake config.
# Defines the imported target ZooKeeper::st.
find_path(ZooKeeperST_INCLUDE_DIR zookeeper/zookeeper.h)
find_library(ZooKeeperST_LIBRARY NAMES zookeeper_st)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(ZooKeeperST
  REQUIRED_VARS ZooKeeperST_LIBRARY ZooKeeperST_INCLUDE_DIR
  REASON_FAILURE_MESSAGE "install the single-threaded ZooKeeper C client: apt-get install libzookeeper-st-dev")
if(ZooKeeperST_FOUND AND NOT TARGET ZooKeeper::st)
  add_library(ZooKeeper::st UNKNOWN IMPORTED)
  set_target_properties(ZooKeeper::st PROPERTIES
    IMPORTED_LOCATION "${ZooKeeperST_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${ZooKeeperST_INCLUDE_DIR}")
endif()
mark_as_advanced(ZooKeeperST_INCLUDE_DIR ZooKeeperST_LIBRARY)
