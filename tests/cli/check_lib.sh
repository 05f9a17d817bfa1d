# Shared by the end-to-end check scripts (exit_codes.sh, mpi_lib.sh): a scratch folder and
# counters, and the checks. Source it; finish with `report`.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
passes=0

expect() {  # expect NAME CODE COMMAND...: COMMAND exits with CODE (stdout in $tmp/out, stderr in $tmp/err)
  local name=$1 code=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$code" ]; then
    echo "FAIL $name: exit $got, expected $code"; sed 's/^/  stderr: /' "$tmp/err" | head -20
    failures=$((failures + 1))
  else
    passes=$((passes + 1))
  fi
}
contains() {  # contains NAME FILE TEXT
  if grep -qF -- "$3" "$2"; then passes=$((passes + 1)); else echo "FAIL $1: '$3' not in $2"; failures=$((failures + 1)); fi
}
count() {  # count NAME FILE TEXT N: TEXT on exactly N lines of FILE
  local n
  n=$(grep -cF -- "$3" "$2")
  if [ "$n" -eq "$4" ]; then passes=$((passes + 1)); else echo "FAIL $1: '$3' on $n lines of $2, expected $4"; sed 's/^/  /' "$2" | head -20; failures=$((failures + 1)); fi
}
same() {  # same NAME FILE_A FILE_B: byte-identical
  if cmp -s "$2" "$3"; then
    passes=$((passes + 1))
  else
    echo "FAIL $1: $2 and $3 differ"; diff "$2" "$3" | head -20
    failures=$((failures + 1))
  fi
}
report() {  # prints the counts; fails when a check failed
  echo "$passes passed, $failures failed"
  [ "$failures" -eq 0 ]
}
