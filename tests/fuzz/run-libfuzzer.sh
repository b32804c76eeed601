#!/bin/sh
# run-libfuzzer.sh — one bounded libFuzzer run of the differential target
# against one backend, for the `fuzz` suite.  New inputs go to a work
# directory in the build tree (the committed corpus is only read); a
# divergence leaves its input there as crash-* and fails the test.
#
# usage: run-libfuzzer.sh TARGET BACKEND SECONDS WORKDIR CORPUS_DIR...
set -eu
target=$1 backend=$2 seconds=$3 work=$4
shift 4
mkdir -p "$work/corpus"
log=$work/libfuzzer.log
status=0
start=$(date +%s)
# libFuzzer's own exit codes for a crash (77) and a timeout (70) would read
# as "skipped" and "error" to meson: any finding is a plain failure.
TB_FUZZ_BACKEND=$backend "$target" -max_total_time="$seconds" \
    -timeout=30 -max_len=4096 -print_final_stats=1 \
    -error_exitcode=1 -timeout_exitcode=1 \
    -artifact_prefix="$work/" "$work/corpus" "$@" >"$log" 2>&1 || status=1
took=$(( $(date +%s) - start ))
execs=$(grep -a '^stat::number_of_executed_units:' "$log" | tail -n 1 |
        tr -dc 0-9)
corpus=$(find "$work/corpus" -type f | wc -l)
echo "libfuzzer $backend: ${execs:-?} executions in $took s," \
     "$corpus new corpus entries in $work/corpus"
if [ "$status" -ne 0 ]; then
    grep -aE 'DIVERGENCE|ERROR|SUMMARY|model:' "$log" | head -n 20 || true
    for a in "$work"/crash-* "$work"/timeout-* "$work"/leak-* \
             "$work"/oom-*; do
        [ -e "$a" ] || continue
        echo "input kept: $a — copy it to tests/fuzz/regressions/ and" \
             "read it with TB_FUZZ_TRACE=1 fuzz_replay --backend $backend $a"
    done
    echo "full libFuzzer log: $log"
fi
exit "$status"
