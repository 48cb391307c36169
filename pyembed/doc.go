// Package pyembed loads a CPython shared library at run time and runs
// CPython's own command line inside this process. Which library and which
// installation is pyembed/findpython's job (pure Go); this package is the
// cgo side.
//
// Nothing links against libpython at build time: the library is opened with
// dlopen(RTLD_LAZY|RTLD_GLOBAL) when it is first needed, so one binary serves
// every CPython from 3.10 on, and C extensions (lib-dynload and wheels, which
// are not linked against libpython) find the C API in the global namespace.
//
// The bridge is cgo over C (shim.c, with the replay of saved plans in
// fastpath.c) rather than purego: C can reset signal dispositions with
// sigaction before CPython starts and run before Go does (constructors),
// C entry points that CPython calls back (module init functions, audit
// hooks) are plain C, and release builds need cgo anyway because a static
// Go binary cannot dlopen.
//
// Running a program is Py_BytesMain with argv[0] set to the python executable
// of the same installation: CPython then computes sys.prefix, the standard
// library, sys.executable and sys.path[0] exactly as that python does, and
// parses every interpreter option itself. Child processes started with
// sys.executable therefore run the same CPython as their parent.
//
// CPython ties its main thread to the OS thread that started it, and process
// signals such as Ctrl-C are delivered to the main thread first, so the
// interpreter runs on the process's main thread: init locks the main
// goroutine to it. Before CPython starts, every signal gets the disposition
// the process inherited (recorded by a C constructor before the Go runtime
// took them over), so CPython sees what python would.
//
// Interp is a second use: an interpreter inside vis-agent for its own work,
// started through PEP 741's PyInitConfig on CPython 3.14+. Python failures
// there come back as *PyError values (type, message, formatted traceback),
// never as text printed on stderr.
//
// It knows no policy and no sandbox. The C that other packages install
// into a loaded library before its interpreter starts lives with its
// owner and includes the headers here (pymodule.h, pyfind.h) through its
// cgo flags: the jail's audit hook (sandbox/jail/audit), the sandbox
// child's built-in modules (sandbox/child); the warm `sandbox run`
// constructor is sandbox/client/runpath's, and the plans' format
// internal/plan's.
package pyembed
