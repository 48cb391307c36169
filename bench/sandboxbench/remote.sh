#!/bin/sh
# Median wall time of a warm block (`x = 1` on a running session) run with
# `vis-agent sandbox run`, locally and through each --host URL given, with
# vis-agent's multiplexer (mux:URL, the default: one engine connection kept
# for every request) and without it (nomux:URL, VIS_SANDBOX_MUX=0: the
# engine's command per request), alternating, RUNS times each (default 30)
# after 3 warm-up runs; and, alternating with them for the breakdown, the
# parts of a request without the multiplexer: a vis-agent process's start
# (`--version`) here, and for each ssh:// URL an OpenSSH session that runs
# nothing of ours (`ssh HOST true`) and one that starts the remote
# vis-agent (`ssh HOST PROGRAM --version`). The load average is printed
# before and after.
#   bench/sandboxbench/remote.sh bin/vis-agent WORKSPACE [URL...]
# The workspace is the same folder here and there (ssh://localhost). Every
# command runs in it, so that a repeated `sandbox run` is carried before Go
# starts (sandbox/client/runpath/runpath.c), here and through the multiplexer, as an
# agent's repeated commands are.
# The same without the client process's start (the connection alone):
#   go run ./bench/sandboxbench -bin bin/vis-agent -remote URL -workspace WORKSPACE
set -eu
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
ws=$(cd "$2" && pwd)
shift 2
cd "$ws"
runs=${RUNS:-30}
now() { date +%s%N; }
one() { # $1: url, "local", or a part of the breakdown
	case $1 in
	local) "$bin" sandbox run --session bench -c 'x = 1' >/dev/null ;;
	version) "$bin" --version >/dev/null ;;
	ssh-true:*)
		h=${1#ssh-true:}
		ssh -T -- "${h%%/*}" true </dev/null
		;;
	ssh-version:*)
		h=${1#ssh-version:}
		ssh -T -- "${h%%/*}" "/${h#*/}" --version </dev/null >/dev/null
		;;
	mux:*) "$bin" sandbox run --host "${1#mux:}" --session bench --workspace "$ws" -c 'x = 1' >/dev/null ;;
	nomux:*) VIS_SANDBOX_MUX=0 "$bin" sandbox run --host "${1#nomux:}" --session bench --workspace "$ws" -c 'x = 1' >/dev/null ;;
	esac
}
medians() { # the targets, timed alternating
	tmp=$(mktemp -d)
	for t in "$@"; do for _ in 1 2 3; do one "$t"; done; done
	i=0
	while [ $i -lt "$runs" ]; do
		n=0
		for t in "$@"; do
			n=$((n + 1))
			s=$(now)
			one "$t"
			echo $(( ($(now) - s) / 1000 )) >>"$tmp/$n"
		done
		i=$((i + 1))
	done
	n=0
	for t in "$@"; do
		n=$((n + 1))
		med=$(sort -n "$tmp/$n" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
		printf '%-60s median %6.1f ms\n' "$t" "$(echo "$med" | awk '{print $1/1000}')"
	done
	rm -rf "$tmp"
}
targets=local
parts=version
for u in "$@"; do
	targets="$targets mux:$u nomux:$u"
	case $u in
	ssh://*) parts="$parts ssh-true:${u#ssh://} ssh-version:${u#ssh://}" ;;
	esac
done
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
# shellcheck disable=SC2086 # targets and parts are lists of words
medians $targets $parts
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
