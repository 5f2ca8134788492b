# Print the test files of one of SQLite's test suites (permutations.test's
# names: veryquick, quick, ...), one a line, without running them.
#   testfixture list-suite.tcl TESTDIR SUITE
set testdir [file normalize [lindex $argv 0]]
set suite [lindex $argv 1]
# permutations.test runs a suite when it is the script itself; as a library it only defines them.
set argv0 $testdir/list-suite
set argv {}
source $testdir/permutations.test
array set spec $::testspec($suite)
foreach f $spec(-files) { puts [file tail $f] }
