#!/bin/sh
# startup-timeline.sh: where the start-up time of one command goes, by
# stage: uprobes (perf probe, as root) on vis-agent's and libpython's entry
# points, and the median time of each from exec over N runs. It takes
# vis-agent, python and anything else that loads LIBPYTHON.
#
#   bench/cmdbench/startup-timeline.sh LIBPYTHON N COMMAND [ARG...]
#
# e.g. with VIS_PYTHON_NATIVE_PATH=$LIB in the environment:
#   bench/cmdbench/startup-timeline.sh $LIB 30 bin/vis-agent python -c pass
#   bench/cmdbench/startup-timeline.sh $LIB 30 /path/to/venv/bin/python -c pass
# The probes are placed on a copy of the command's executable and removed
# afterwards. Uprobes add a few microseconds per hit.
set -eu
lib=$1 runs=$2
shift 2
exe=$(command -v "$1")
shift
tmp=$(mktemp -d)
trap 'perf probe -q -d "probe_vt:*" 2>/dev/null || true; rm -rf "$tmp"' EXIT
cp "$exe" "$tmp/cmd"
perf probe -q -d 'probe_vt:*' 2>/dev/null || true
m=github.com/vis-agent/vis-agent
for p in ctor=vis_prefetch prefetch=prefetch_run rt_main=runtime.main main=main.main \
	open_library=vis_py_open library_open=vis_py_resolve plan=$m/pyrun.NewPlan \
	python_main=vis_py_main uv_exec=$m/uvwrap.Exec; do
	perf probe -q -x "$tmp/cmd" -a "probe_vt:$p" >/dev/null 2>&1 || true
done
for p in Py_BytesMain Py_RunMain Py_FinalizeEx; do
	perf probe -q -x "$lib" -a "probe_vt:$p=$p" >/dev/null 2>&1 || true
done
perf record -q -o "$tmp/perf.data" -e 'probe_vt:*' -e syscalls:sys_enter_execve \
	-e sched:sched_process_exit -- sh -c 'i=0; while [ $i -lt '"$runs"' ]; do "$0" "$@" >/dev/null; i=$((i+1)); done' "$tmp/cmd" "$@" 2>/dev/null
# One line per event: time (ms) and name; a run starts at its execve and
# ends when its main thread (pid == tid) exits.
perf script -i "$tmp/perf.data" -F pid,tid,time,event 2>/dev/null | awk '
	{ split($1, id, "/"); t = $2; sub(/:$/, "", t); t *= 1000; ev = $3; sub(/:$/, "", ev); sub(/^.*:/, "", ev) }
	ev == "sys_enter_execve" { t0 = t; run++; next }
	ev == "sched_process_exit" { if (id[1] == id[2] && run) { key = "exit" } else next }
	ev != "sched_process_exit" { key = ev }
	run && !((run, key) in seen) { seen[run, key] = 1; at[key, ++n[key]] = t - t0; if (!(key in order)) { order[key] = ++k; name[k] = key } }
	END {
		for (i = 1; i <= k; i++) {
			key = name[i]; c = n[key]
			for (a = 1; a <= c; a++) v[a] = at[key, a]
			for (a = 2; a <= c; a++) { x = v[a]; b = a - 1; while (b > 0 && v[b] > x) { v[b+1] = v[b]; b-- } v[b+1] = x }
			printf "%-16s median %7.2f ms after exec (%d runs)\n", key, v[int((c + 1) / 2)], c
		}
	}' | sort -k3 -n
