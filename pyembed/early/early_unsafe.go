// Package early does the start-up work of `vis-agent python` that cannot
// wait for main: Go runs its init among the first package inits, because it
// imports nothing but cgo and runtime (TestPythonStartupPrefetchEarly
// checks). Package pyembed, which imports it, defines the C functions.
//
// It gives Go a single P for the rest of the run, as pyembed.Library.Main
// would before CPython starts anyway: without an idle P the runtime starts
// no more threads (each would wait for the load below, which holds glibc's
// loader lock that pthread_create takes), and dropping the P now, before
// the inits have filled its caches, costs none of the ~220 page faults it
// did later. Then it starts loading the libpython the run is predicted to
// use (see pyembed/shim.c) on a helper thread, to overlap with the other
// packages' inits; started before the Go runtime had created its threads,
// the load made them wait.
package early

/*
#cgo CFLAGS: -I${SRCDIR}/..
#include "shim.h"
*/
import "C"

import "runtime"

func init() {
	if C.vis_py_python_command() == 0 {
		return
	}
	runtime.GOMAXPROCS(1)
	C.vis_py_prefetch_start()
}
