// Package early does the start-up work of `vis-agent python` that cannot
// wait for main: Go runs its init among the first package inits, because it
// imports nothing but cgo and runtime (TestPythonStartupPrefetchEarly
// checks). Package pyembed, which imports it, defines the C functions.
//
// It starts loading the libpython the run is predicted to use (see
// pyembed/shim.c) on a helper thread, to overlap with the other packages'
// inits; started before the Go runtime had created its threads, the load
// made them wait. And it gives Go a single P for the rest of the run, as
// pyembed.Library.Main would before CPython starts anyway: no idle P means
// no new threads (each would wait for the load too) and none of the page
// faults of dropping a P's caches once the inits have filled them.
package early

/*
void vis_py_prefetch_start(void);
int vis_py_python_command(void);
*/
import "C"

import "runtime"

func init() {
	if C.vis_py_python_command() == 0 {
		return
	}
	C.vis_py_prefetch_start()
	runtime.GOMAXPROCS(1)
}
