# Debian packages through CPack (`cpack -G DEB` in the build directory, or the `packages` target):
#
#   kbfleet-common       problem specs and migrations (/usr/share/kbfleet), the kbfleet user
#   kbfleet-worker       kb-worker, kb-executor, kb-worker@.service, /etc/kbfleet/worker.yaml
#   kbfleet-coordinator  kb-coordinator, kb-coordinator.service, /etc/kbfleet/coordinator.yaml
#   kbfleet-cli          kb
#
# Depends name the Debian 12 libraries the programs link (listed here, not computed by
# dpkg-shlibdeps: a CUDA build also links cuDNN/cuBLAS/CUPTI from NVIDIA's packages or the CUDA
# toolkit, which a GPU node brings itself; see deploy/README.md). Maintainer scripts
# (deploy/packaging/debian/) create the kbfleet system user and reload systemd.
include(GNUInstallDirs)

set(KB_PKG_DIR ${PROJECT_SOURCE_DIR}/deploy/packaging/debian)

install(TARGETS kb-worker kb-executor RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT worker)
# The trusted reference pack and its pin, byte for byte (install(TARGETS) would rewrite its RPATH and
# so its sha256): kb-worker finds it at ../lib/libkbref.so from its own directory.
install(FILES $<TARGET_FILE:kbref> $<TARGET_FILE:kbref>.sha256 DESTINATION lib COMPONENT worker)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/kb-worker@.service
        DESTINATION lib/systemd/system COMPONENT worker)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/config/worker.yaml DESTINATION /etc/kbfleet COMPONENT worker)

install(TARGETS kb-coordinator RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT coordinator)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/kb-coordinator.service
        DESTINATION lib/systemd/system COMPONENT coordinator)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/config/coordinator.yaml DESTINATION /etc/kbfleet
        COMPONENT coordinator)

install(TARGETS kb RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/problems/ DESTINATION ${CMAKE_INSTALL_DATADIR}/kbfleet/problems
        COMPONENT common)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/schemas/ DESTINATION ${CMAKE_INSTALL_DATADIR}/kbfleet/schemas
        COMPONENT common FILES_MATCHING PATTERN "*.sql")
install(FILES ${PROJECT_SOURCE_DIR}/deploy/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}
        COMPONENT common)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kbfleet)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "kbfleet maintainers <kbfleet@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "kbfleet: verify and time custom GPU kernels on a pool of workers")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_COMPONENTS_ALL common worker coordinator cli)

set(CPACK_DEBIAN_COMMON_PACKAGE_NAME kbfleet-common)
set(CPACK_DEBIAN_COMMON_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_COMMON_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_COMMON_PACKAGE_CONTROL_EXTRA ${KB_PKG_DIR}/common/postinst)
set(CPACK_COMPONENT_COMMON_DESCRIPTION "kbfleet problem specs, migrations and system user")

# The libraries every daemon links (libzmq pulls libsodium for CURVE).
set(KB_DEB_BASE "libc6, libstdc++6, libgcc-s1, libzmq5, libyaml-cpp0.7, libspdlog1.10, libfmt9, libssl3")
set(CPACK_DEBIAN_WORKER_PACKAGE_NAME kbfleet-worker)
set(CPACK_DEBIAN_WORKER_PACKAGE_DEPENDS "kbfleet-common (= ${PROJECT_VERSION}), ${KB_DEB_BASE}")
set(CPACK_DEBIAN_WORKER_PACKAGE_RECOMMENDS "bubblewrap")
set(CPACK_DEBIAN_WORKER_PACKAGE_CONTROL_EXTRA
    ${KB_PKG_DIR}/worker/postinst ${KB_PKG_DIR}/worker/prerm ${KB_PKG_DIR}/worker/conffiles)
set(CPACK_COMPONENT_WORKER_DESCRIPTION "kbfleet GPU worker (kb-worker, kb-executor, systemd unit)")

set(CPACK_DEBIAN_COORDINATOR_PACKAGE_NAME kbfleet-coordinator)
set(CPACK_DEBIAN_COORDINATOR_PACKAGE_DEPENDS
    "kbfleet-common (= ${PROJECT_VERSION}), ${KB_DEB_BASE}, libpqxx-6.4")
set(CPACK_DEBIAN_COORDINATOR_PACKAGE_RECOMMENDS "postgresql")
set(CPACK_DEBIAN_COORDINATOR_PACKAGE_CONTROL_EXTRA
    ${KB_PKG_DIR}/coordinator/postinst ${KB_PKG_DIR}/coordinator/prerm
    ${KB_PKG_DIR}/coordinator/conffiles)
set(CPACK_COMPONENT_COORDINATOR_DESCRIPTION "kbfleet coordinator (queue, scheduler, results store)")

set(CPACK_DEBIAN_CLI_PACKAGE_NAME kbfleet-cli)
set(CPACK_DEBIAN_CLI_PACKAGE_DEPENDS "kbfleet-common (= ${PROJECT_VERSION}), ${KB_DEB_BASE}, libpqxx-6.4")
set(CPACK_COMPONENT_CLI_DESCRIPTION "kbfleet command-line tool (kb)")

include(CPack)
