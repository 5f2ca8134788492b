# ctest driver of oracle_sf001 (cmake -P): generate the .tbl data once, run every query in
# spillbench under two configurations, and let oracle.py compare each run.  Fails on the
# first step that fails.
# Inputs: TPCHGEN SPILLBENCH PYTHON ORACLE SQLITE3 SF WORK.
# The .tbl directory is reused only if its meta.txt (written last by tpchgen) names SF and
# is newer than tpchgen, so a half-written, other-scale or older generator's directory is
# regenerated; spillbench's binary data directory is dropped under the same rule (spillbench
# regenerates it), so both sides always hold the current generator's data.  Each
# spillbench results directory is emptied first, so a query it no longer writes cannot
# pass on a stale file.
set(tbl_dir ${WORK}/oracle-data)
set(bin_dir ${WORK}/oracle-bin-data)
set(results_root ${WORK}/oracle-spillbench-results)

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "oracle_sf001: ${what} failed (${rc})")
  endif()
endfunction()

set(have_tbl FALSE)
if(EXISTS ${tbl_dir}/meta.txt AND EXISTS ${tbl_dir}/lineitem.tbl
   AND ${tbl_dir}/meta.txt IS_NEWER_THAN ${TPCHGEN})
  file(STRINGS ${tbl_dir}/meta.txt sf_line REGEX "^sf=")
  if(sf_line)
    string(REGEX REPLACE "^sf=" "" tbl_sf "${sf_line}")
    if(tbl_sf STREQUAL SF)
      set(have_tbl TRUE)
    endif()
  endif()
endif()
if(NOT have_tbl)
  file(REMOVE_RECURSE ${tbl_dir})
  run_step("tpchgen" ${TPCHGEN} --sf=${SF} --out=${tbl_dir} --format=tbl)
endif()
if(NOT ${bin_dir}/meta.txt IS_NEWER_THAN ${SPILLBENCH})
  file(REMOVE_RECURSE ${bin_dir})
endif()

# Codec none with work_mem 4MB (nothing spills at SF 0.01: the plans alone), then
# one where most operators spill through compressed buffile files, against the same oracle.
foreach(config "none;4MB" "lz4;64K")
  list(GET config 0 codec)
  list(GET config 1 work_mem)
  set(results_dir ${results_root}-${codec}-${work_mem})
  file(REMOVE_RECURSE ${results_dir})
  file(MAKE_DIRECTORY ${results_dir})
  message(STATUS "spillbench --codec=${codec} --work-mem=${work_mem} against the oracle")
  run_step("spillbench (${codec}, ${work_mem})" ${SPILLBENCH} --sf=${SF} --data-dir=${bin_dir}
           --queries=all --codec=${codec} --work-mem=${work_mem} --results-dir=${results_dir})
  run_step("oracle.py (${codec}, ${work_mem})" ${PYTHON} ${ORACLE} --tbl-dir=${tbl_dir}
           --results-dir=${results_dir} --queries=all --sqlite3=${SQLITE3})
endforeach()
