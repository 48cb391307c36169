#!/bin/sh
# Median wall time of a warm block (`x = 1` on a running session) run with
# `vis-agent sandbox run`, locally and through each --host URL given,
# alternating, RUNS times each (default 30) after 3 warm-up runs.
#   internal/sandboxbench/remote.sh bin/vis-agent WORKSPACE [URL...]
# The workspace is the same folder here and there (ssh://localhost).
set -eu
bin=$1 ws=$2
shift 2
runs=${RUNS:-30}
now() { date +%s%N; }
one() { # $1: url or "local"
	if [ "$1" = local ]; then
		"$bin" sandbox run --session bench --workspace "$ws" -c 'x = 1' >/dev/null
	else
		"$bin" sandbox run --host "$1" --session bench --workspace "$ws" -c 'x = 1' >/dev/null
	fi
}
targets="local $*"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for t in $targets; do for _ in 1 2 3; do one "$t"; done; done
i=0
while [ $i -lt "$runs" ]; do
	n=0
	for t in $targets; do
		n=$((n + 1))
		s=$(now)
		one "$t"
		echo $(( ($(now) - s) / 1000 )) >>"$tmp/$n"
	done
	i=$((i + 1))
done
n=0
for t in $targets; do
	n=$((n + 1))
	med=$(sort -n "$tmp/$n" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
	printf '%-60s median %6.1f ms\n' "$t" "$(echo "$med" | awk '{print $1/1000}')"
done
