#!/usr/bin/env bash
# DESIGN's closed loop, end to end on this CPU: `plan` picks a 4-rank plan for the
# tiny DeepSeek-V3 on cpu-host-1x4, `run` executes that very file under
# `mpirun -np 4`, its tokens equal the 1-rank run's, then `calibrate` and
# `validate` read the Measurements.
# usage: plan_run_loop.sh DAYZERO SOURCE_DIR WORK_DIR MPIRUN
set -eu
dayzero=$1 src=$2 work=$3 mpirun=$4
rm -rf "$work" && mkdir -p "$work"
cd "$work"
"$dayzero" plan "$src/scenarios/tiny-deepseek-cpu-host.json" --top 1 --out plans >/dev/null
plan=plans/plan-01.json
world=4  # the scenario searches 4-device plans only; `run` refuses a plan for another rank count
weights="$src/tests/fixtures/tiny/deepseek_v3"
args=(--weights "$weights" --prompt-len 16 --decode-steps 6 --batch 4)
"$mpirun" --allow-run-as-root --oversubscribe -np "$world" "$dayzero" run "$plan" "${args[@]}" --out sharded.json \
  > sharded.txt 2>&1 || { cat sharded.txt; exit 1; }
"$dayzero" run "${args[@]}" --iterations 0 --out one.json > one.txt
grep "tokens:" sharded.txt
diff <(grep "tokens:" sharded.txt) <(grep "tokens:" one.txt) || { echo "FAIL: the plan's tokens differ from one rank's"; exit 1; }
"$dayzero" calibrate sharded.json --out calibration.json > /dev/null
"$dayzero" validate sharded.json --calibration calibration.json | tail -6
echo "PASS: plan -> run ($world ranks) -> calibrate -> validate"
