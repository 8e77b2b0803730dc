#!/usr/bin/env bash
# Prints the graph of DayZero's libraries as CMake sees it (cmake --graphviz), one
# "user -> used" edge per line: the evidence that dependencies point only downward
# (tests/architecture/test_layering.cpp checks the same from the sources).
#   tools/library-graph.sh [BUILD_DIR]     (default: build)
set -euo pipefail
build=${1:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
dot=$(mktemp -d)/deps.dot
cmake -S "$src" -B "$build" --graphviz="$dot" > /dev/null
awk '
  /\[ label = "/ { match($0, /"node[0-9]+"/); id = substr($0, RSTART, RLENGTH);
                   match($0, /label = "[^"]+"/); name[id] = substr($0, RSTART + 9, RLENGTH - 10) }
  / -> / { match($0, /^ *"node[0-9]+"/); a = substr($0, RSTART, RLENGTH); gsub(/ /, "", a);
           match($0, /-> "node[0-9]+"/); b = substr($0, RSTART + 3, RLENGTH - 3);
           edges[++n] = a " " b }
  END { for (i = 1; i <= n; i++) { split(edges[i], e, " ");
          if (name[e[1]] ~ /^dayzero/ && name[e[2]] ~ /^dayzero_/ && name[e[2]] != "dayzero_warnings")
            print name[e[1]] " -> " name[e[2]] } }
' "$dot" | sort -u
