#!/usr/bin/env bash
# A rank lost mid-run under mpirun: every other rank must exit within 10 s, the
# exit status must be non-zero, a message must name the lost rank, and the
# Measurements file written before (at --out) must be left byte for byte, with no
# temporary beside it.
#   killed: the rank is killed with SIGKILL while its peers wait for it in a
#           collective (OpenMPI's runtime sees the death and stops the job).
#   hung:   the rank sleeps (the test-only hook, cli/test_hooks.h); its peers'
#           collectives time out after --collective-timeout 3 s, they name it and
#           abort the job.
# Both pause the victim with DAYZERO_TEST_HANG_RANK / DAYZERO_TEST_HANG_AT before
# its 4th forward step (decode; prefill done), which prints its pid: that line is
# the moment the exit time is measured from (hung), or the kill is (killed).
# 2 ranks run TP 2; 4 ranks TP 2 x PP 2 of the tiny Llama.
# usage: mpi_rank_failure.sh DAYZERO TINY_FIXTURES_DIR WORK_DIR MPIRUN killed|hung NP
set -u
dayzero=$1 tiny=$2 work=$3 mpirun=$4 mode=$5 np=$6
rm -rf "$work" && mkdir -p "$work"
fail() {
  echo "FAIL: $*"
  echo "--- mpirun's output:"
  cat "$work/log" 2>/dev/null
  exit 1
}
now() { date +%s.%N; }
limit_s=10

case $np in
  2) layout=(--tp 2) victim=1 ;;
  4) layout=(--tp 2 --pp 2) victim=3 ;;  # the last stage's second TP rank
  *) fail "NP must be 2 or 4, not $np" ;;
esac
case $mode in
  killed) timeout=() ;;                       # the default (600 s): the runtime must notice
  hung) timeout=(--collective-timeout 3) ;;
  *) fail "mode must be killed or hung, not $mode" ;;
esac

out="$work/m.json"
printf '{"an earlier run": "must survive"}\n' > "$out"
cp "$out" "$work/before.json"

DAYZERO_TEST_HANG_RANK=$victim DAYZERO_TEST_HANG_AT=3 DAYZERO_THREADS=1 \
  "$mpirun" --allow-run-as-root --oversubscribe -np "$np" -x DAYZERO_TEST_HANG_RANK -x DAYZERO_TEST_HANG_AT \
  -x DAYZERO_THREADS "$dayzero" run --weights "$tiny/llama" "${layout[@]}" "${timeout[@]}" --prompt-len 8 \
  --decode-steps 6 --iterations 1 --out "$out" > "$work/log" 2>&1 &
job=$!

# The victim's line: "dayzero: rank R: test hook: hanging before step 3 (pid P)".
for _ in $(seq 600); do
  grep -q "rank $victim: test hook: hanging" "$work/log" 2>/dev/null && break
  kill -0 $job 2>/dev/null || break
  sleep 0.05
done
line=$(grep -m1 "rank $victim: test hook: hanging" "$work/log") || { kill -9 $job; fail "rank $victim never reached the hook"; }
pid=$(sed -n 's/.*(pid \([0-9]*\)).*/\1/p' <<< "$line")
[ -n "$pid" ] || fail "no pid in '$line'"
t0=$(now)
if [ "$mode" = killed ]; then
  kill -KILL "$pid" || fail "cannot kill pid $pid"
fi

# Every rank gone (mpirun exits last), or the limit passed.
while kill -0 $job 2>/dev/null; do
  if awk -v a="$t0" -v b="$(now)" -v l=$limit_s 'BEGIN { exit !(b - a > l + 5) }'; then
    kill -KILL $job
    fail "mpirun still running $((limit_s + 5)) s after the $mode rank"
  fi
  sleep 0.05
done
wait $job
rc=$?
t1=$(now)
elapsed=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
echo "--- $mode rank $victim of $np: mpirun exited $elapsed s after the $mode rank (exit status $rc)"
grep -E "error|rank $victim|signal" "$work/log" | head -20

[ $rc -ne 0 ] || fail "exit status 0"
awk -v e="$elapsed" -v l=$limit_s 'BEGIN { exit !(e <= l) }' || fail "took $elapsed s, more than $limit_s s"
if [ "$mode" = killed ]; then
  # OpenMPI: "mpirun noticed that process rank R with PID P on node N exited on signal 9 (Killed)."
  grep -Eq "process rank $victim .*signal 9|waiting for ranks? ([0-9]+, )*$victim\b" "$work/log" ||
    fail "no message names rank $victim as killed"
else
  grep -Eq "rank [0-9]+: error: .* timed out after 3 s waiting for ranks? ([0-9]+, )*$victim\b" "$work/log" ||
    fail "no rank reports waiting for rank $victim"
fi
cmp -s "$out" "$work/before.json" || fail "the earlier Measurements file was changed"
leftovers=$(ls "$work" | grep -E '^m\.json\.tmp' || true)
[ -z "$leftovers" ] || fail "temporary files left: $leftovers"
echo "PASS: $mode rank $victim of $np stopped the run in $elapsed s (limit $limit_s s), named, earlier file intact"
