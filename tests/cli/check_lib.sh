# The counting check of the CLI test scripts (sourced): `check NAME COMMAND...` runs COMMAND, counts a pass
# or prints "FAILED: NAME" and counts a failure; `check_summary LABEL` prints the counts and returns
# non-zero when any check failed.
fails=0; passes=0
check() {  # check NAME CONDITION...
    local name=$1; shift
    if "$@"; then passes=$((passes + 1)); else echo "FAILED: $name"; fails=$((fails + 1)); fi
}
check_summary() {  # check_summary LABEL
    echo "$1$passes passed, $fails failed"
    test "$fails" -eq 0
}
