# pkg-config files with plain absolute paths (prefix=/usr, libdir=${prefix}/lib/<triplet>,
# includedir=${prefix}/include), as Debian's own .pc files have them: pkg-config then prints
# no -I/usr/include at all (a system directory), never .../pkgconfig/../../../include.
#
# A .pc file is made in two passes. At configure time its template (configure_file @ONLY)
# gets everything but the prefix, which stays the placeholder @BF_PC_PREFIX@ (the value of
# BF_PC_PREFIX below); at install time bf_pc_install_prefix writes the prefix the install
# goes to - CMAKE_INSTALL_PREFIX, or the one `cmake --install --prefix` gives - into the
# installed file, so that an install into any prefix has its own paths.
#   include(pkgconfig)          (before the templates are configured)
#   bf_pc_install_prefix(NAME)  (after the rule that installs NAME.pc into <libdir>/pkgconfig)
set(BF_PC_PREFIX "@BF_PC_PREFIX@")
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(BF_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(BF_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()

function(bf_pc_install_prefix name)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set(pc "\$ENV{DESTDIR}${CMAKE_INSTALL_LIBDIR}/pkgconfig/${name}.pc")
  else()
    set(pc "\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig/${name}.pc")
  endif()
  install(CODE "
    get_filename_component(bf_prefix \"\${CMAKE_INSTALL_PREFIX}\" ABSOLUTE)
    file(READ \"${pc}\" bf_pc)
    string(REPLACE \"@BF_PC_PREFIX@\" \"\${bf_prefix}\" bf_pc \"\${bf_pc}\")
    file(WRITE \"${pc}\" \"\${bf_pc}\")")
endfunction()
