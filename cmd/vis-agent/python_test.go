package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// showEnv prints what a program sees of how it was started.
const showEnv = `import sys, os
print("argv", sys.argv)
print("path0", repr(sys.path[0]))
print("name", __name__)
print("file", globals().get("__file__"))
spec = globals().get("__spec__")
print("spec", spec and (spec.name, spec.parent, spec.origin))
print("exe", sys.executable == os.path.realpath(sys.executable) or sys.executable)
print("flags", sys.flags)
print("warnoptions", sys.warnoptions, "xoptions", sys._xoptions)
print("stdin", sys.stdin.isatty(), sys.stdin.encoding, sys.stdout.encoding, sys.stdout.line_buffering)
`

func zipWithMain(main string) string {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	f, _ := w.Create("__main__.py")
	f.Write([]byte(main))
	f, _ = w.Create("helper.py")
	f.Write([]byte("VALUE = 'from zip'\n"))
	w.Close()
	return buf.String()
}

// pythonCases are the command lines on which vis-agent python must behave
// exactly as python: same stdout, stderr and exit status.
var pythonCases = []pyCase{
	// Program selectors.
	{name: "c", args: []string{"-c", showEnv}},
	{name: "c args verbatim", args: []string{"-c", "import sys; print(sys.argv)", "-x", "--shared", "--", "-c", "uv"}},
	{name: "c attached", args: []string{"-cimport sys; print(sys.argv)", "a"}},
	{name: "options cluster", args: []string{"-BsEc", "import sys; print(sys.flags.dont_write_bytecode, sys.flags.no_user_site, sys.flags.ignore_environment)"}},
	{name: "m package main", args: []string{"-m", "pkg", "x", "-y"}, files: map[string]string{
		"pkg/__init__.py": "print('init', __name__)\n", "pkg/__main__.py": showEnv}},
	{name: "m submodule", args: []string{"-m", "pkg.sub", "--flag"}, files: map[string]string{
		"pkg/__init__.py": "", "pkg/sub.py": showEnv}},
	{name: "m attached", args: []string{"-mpkg.sub"}, files: map[string]string{
		"pkg/__init__.py": "", "pkg/sub.py": "print(__name__, __spec__.name)\n"}},
	{name: "m stdlib with stdin", args: []string{"-m", "json.tool"}, stdin: `{"b": 1, "a": [1, 2]}`},
	{name: "m missing", args: []string{"-m", "no_such_module_xyz"}},
	{name: "m package without main", args: []string{"-m", "pkg"}, files: map[string]string{"pkg/__init__.py": ""}},
	{name: "script", args: []string{"prog.py", "-c", "--shared"}, files: map[string]string{"prog.py": showEnv}},
	{name: "script in folder", args: []string{"sub/prog.py"}, files: map[string]string{"sub/prog.py": showEnv}},
	{name: "dash dash script", args: []string{"--", "-prog.py", "a"}, files: map[string]string{"-prog.py": showEnv}},
	{name: "folder with main", args: []string{"app", "arg"}, files: map[string]string{
		"app/__main__.py": showEnv + "import helper; print(helper.VALUE)\n", "app/helper.py": "VALUE = 'from folder'\n"}},
	{name: "zip with main", args: []string{"app.zip", "arg"}, files: map[string]string{
		"app.zip": zipWithMain(showEnv + "import helper; print(helper.VALUE)\n")}},
	{name: "folder without main", args: []string{"empty"}, files: map[string]string{"empty/": ""}},
	{name: "missing script", args: []string{"nope.py"}},
	{name: "binary garbage script", args: []string{"garbage.py"}, files: map[string]string{"garbage.py": "\x00\x01\xff\xfeELF\x00\x00junk\n"}},
	{name: "invalid utf8 script", args: []string{"bad.py"}, files: map[string]string{"bad.py": "print('\xff\xfe')\n"}},
	{name: "syntax error script", args: []string{"bad.py"}, files: map[string]string{"bad.py": "def f(:\n    pass\n"}},
	{name: "stdin dash", args: []string{"-", "a", "-b"}, stdin: showEnv},
	{name: "stdin implicit", stdin: "import sys\nprint('from stdin', sys.argv)\nprint(input('?'))\n"},
	{name: "stdin for program", args: []string{"-c", "import sys; data = sys.stdin.read(); print(len(data), data.upper())"}, stdin: "hello\nworld\n"},
	{name: "input eof", args: []string{"-c", "input('prompt> ')"}},

	// How programs end.
	{name: "traceback", args: []string{"-c", "def f():\n    raise ValueError('boom')\nf()"}},
	{name: "chained traceback", args: []string{"prog.py"}, files: map[string]string{"prog.py": "try:\n    1/0\nexcept Exception as e:\n    raise KeyError('k') from e\n"}},
	{name: "exit code", args: []string{"-c", "raise SystemExit(3)"}},
	{name: "exit message", args: []string{"-c", "import sys; sys.exit('fatal: bad thing')"}},
	{name: "exit none", args: []string{"-c", "import sys; sys.exit(None)"}},
	{name: "exit big", args: []string{"-c", "import sys; sys.exit(256 + 7)"}},
	{name: "os exit skips atexit", args: []string{"-c", "import atexit, os; atexit.register(print, 'no'); print('yes', flush=True); os._exit(7)"}},
	{name: "os exit loses buffer", args: []string{"-c", "import os; print('lost'); os._exit(0)"}},
	{name: "atexit", args: []string{"-c", "import atexit; atexit.register(print, 'bye'); print('hi')"}},
	{name: "thread joined", args: []string{"-c", "import threading, time\ndef w():\n    time.sleep(0.2); print('worker done')\nthreading.Thread(target=w).start(); print('main done')"}},
	{name: "keyboard interrupt raised", args: []string{"-c", "raise KeyboardInterrupt"}},
	{name: "warnings", args: []string{"-c", "import warnings; warnings.warn('careful'); warnings.warn('old', DeprecationWarning)"}},
	{name: "warnings error", args: []string{"-W", "error", "-c", "import warnings; warnings.warn('careful')"}},
	{name: "warnings attached", args: []string{"-Wignore::UserWarning", "-c", "import warnings, sys; warnings.warn('hidden'); print(sys.warnoptions)"}},

	// Output: buffering, ordering, encoding.
	{name: "ordering combined", combined: true, args: []string{"-c", "import sys\nfor i in range(3):\n    print('out', i)\n    print('err', i, file=sys.stderr)\nraise SystemExit('end')"}},
	{name: "ordering unbuffered", combined: true, args: []string{"-u", "-c", "import sys\nfor i in range(3):\n    print('out', i)\n    print('err', i, file=sys.stderr)"}},
	{name: "encoding", args: []string{"-c", "print('héllo wörld ✓ 日本', len('日本'))"}},
	{name: "encoding c locale", env: []string{"LC_ALL=C", "LANG=C"}, args: []string{"-c", "import sys; print(sys.stdout.encoding, sys.getfilesystemencoding()); print('✓')"}},
	{name: "encoding ascii errors", env: []string{"PYTHONIOENCODING=ascii"}, args: []string{"-c", "print('✓')"}},
	{name: "large output", args: []string{"-c", "import sys\nfor i in range(20000): print(i, 'x' * 50)"}},

	// Interpreter options.
	{name: "version", args: []string{"--version"}},
	{name: "version short", args: []string{"-V"}},
	{name: "version verbose", args: []string{"-VV"}},
	{name: "opt B E s", args: []string{"-B", "-E", "-s", "-c", showEnv}},
	{name: "opt I", args: []string{"-I", "-c", showEnv}},
	{name: "opt S", args: []string{"-S", "-c", "import sys; print('site' in sys.modules)"}},
	{name: "opt O", args: []string{"-O", "-c", "assert False, 'kept'; print(__debug__)"}},
	{name: "opt OO", args: []string{"-OO", "-c", "def f():\n    'doc'\nprint(f.__doc__, __debug__)"}},
	{name: "opt q", args: []string{"-q", "-c", "import sys; print(sys.flags.quiet)"}},
	{name: "opt X utf8", args: []string{"-X", "utf8", "-c", "import sys; print(sys.flags.utf8_mode, sys._xoptions)"}},
	{name: "opt X dev", args: []string{"-Xdev", "-c", "import sys; print(sys.flags.dev_mode)"}},
	{name: "opt b", args: []string{"-bb", "-c", "str(b'x')"}},
	{name: "opt x skip first line", args: []string{"-x", "prog.py"}, files: map[string]string{"prog.py": "this is not python\nprint('second line')\n"}},
	{name: "opt P", minMinor: 11, args: []string{"-P", "-c", "import sys; print(sys.path[0] == '' , sys.flags.safe_path)"}},
	{name: "opt check hash", args: []string{"--check-hash-based-pycs", "always", "-c", "print('ok')"}},
	{name: "opt i with stdin", args: []string{"-i", "-c", "x = 41"}, stdin: "print(x + 1)\n"},
	{name: "option after program is the program's", args: []string{"-c", "import sys; print(sys.argv)", "-V", "-h"}},
	{name: "help env", minMinor: 11, args: []string{"--help-env"}},
	{name: "missing c argument", args: []string{"-c"}, statusOnly: true},
	{name: "unknown option", args: []string{"-Z", "-c", "pass"}, statusOnly: true},

	// Children run the same CPython.
	{name: "subprocess sys.executable", args: []string{"-c", "import subprocess, sys\nout = subprocess.run([sys.executable, '-c', 'import sys; print(sys.version)'], capture_output=True, text=True).stdout\nprint(out.strip() == sys.version)"}},
	{name: "multiprocessing spawn", args: []string{"prog.py"}, files: map[string]string{"prog.py": `import multiprocessing as mp, sys
def square(x):
    return x * x
if __name__ == "__main__":
    mp.set_start_method("spawn")
    with mp.Pool(2) as p:
        print(p.map(square, range(5)))
    print(mp.get_start_method())
`}},
	{name: "multiprocessing fork", args: []string{"prog.py"}, files: map[string]string{"prog.py": `import multiprocessing as mp, os
def square(x):
    return x * x
if __name__ == "__main__":
    mp.set_start_method("fork")
    with mp.Pool(2) as p:
        print(p.map(square, range(5)))
    q = mp.Process(target=os._exit, args=(5,))
    q.start(); q.join()
    print(q.exitcode)
`}},
	{name: "venv module", args: []string{"-c", "import venv, sys, subprocess, os\nvenv.create('env', with_pip=False)\nout = subprocess.run([os.path.join('env', 'bin', 'python'), '-c', 'import sys; print(sys.prefix != sys.base_prefix, sys.version_info[:2])'], capture_output=True, text=True).stdout\nprint(out.strip())"}},

	// Signals and pipes.
	{name: "sigint while sleeping", args: []string{"-c", "import time, atexit\natexit.register(print, 'atexit ran')\ntry:\n    print('ready', flush=True)\n    time.sleep(30)\nfinally:\n    print('finally ran', flush=True)"}, drive: interruptWhenReady},
	{name: "sigint while reading", args: []string{"-c", "import sys\nprint('ready', flush=True)\nsys.stdin.readline()"}, drive: interruptWhenReady},
	{name: "sigint in busy loop", args: []string{"-c", "print('ready', flush=True)\nwhile True:\n    pass"}, drive: interruptWhenReady},
	{name: "sigint caught", args: []string{"-c", "import time\ntry:\n    print('ready', flush=True)\n    time.sleep(30)\nexcept KeyboardInterrupt:\n    print('caught')\n    raise SystemExit(4)"}, drive: interruptWhenReady},
	{name: "sigint custom handler", args: []string{"-c", "import signal, time\nsignal.signal(signal.SIGINT, lambda *a: print('handled', flush=True))\nprint('ready', flush=True)\ntime.sleep(0.5)\nprint('after')"}, drive: interruptWhenReady},
	{name: "broken pipe", args: []string{"-c", "for i in range(200000):\n    print(i)"}, drive: closeAfterFirstLine},
	{name: "broken pipe before output", args: []string{"-c", "import sys\nsys.stdin.readline()\nfor i in range(200000):\n    print(i)"}, drive: closeBeforeOutput},
	{name: "broken pipe handled", args: []string{"-c", "import sys, os\ntry:\n    for i in range(200000):\n        print(i)\n    sys.stdout.flush()\nexcept BrokenPipeError:\n    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())\n    sys.exit(3)"}, drive: closeAfterFirstLine},
	{name: "signal dispositions", args: []string{"-c", "import signal\nfor s in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGHUP, signal.SIGCHLD, signal.SIGSEGV, signal.SIGUSR1, signal.SIGXFSZ):\n    print(s.name, signal.getsignal(s))"}},
	{name: "sigterm", args: []string{"-c", "import os, signal; print('x', flush=True); os.kill(os.getpid(), signal.SIGTERM)"}},
	{name: "sigsegv", args: []string{"-c", "import ctypes; print('x', flush=True); ctypes.string_at(0)"}},
	// CPython 3.14 adds the thread's name, which is the process's (python3.14
	// there, vis-agent here), and the C stack, which names the binary and
	// its addresses.
	{name: "faulthandler", args: []string{"-X", "faulthandler", "-c", "import ctypes; ctypes.string_at(0)"}, scrub: regexp.MustCompile(`thread 0x[0-9a-f]+( \[[^\]\n]*\])?|(?s:Current thread's C stack trace.*)`)},
	{name: "abort", args: []string{"-c", "import os; os.abort()"}},

	// Big inputs.
	{name: "large c", args: []string{"-c", "x = 0\n" + strings.Repeat("x += 1\n", 17000) + "print(x)"}},
	{name: "many args", args: append([]string{"-c", "import sys; print(len(sys.argv), sum(map(len, sys.argv)))"}, manyArgs()...)},
}

// manyArgs is about 1 MB of arguments: Linux limits one argument to
// 128 KiB, so a 1 MB command line comes as many.
func manyArgs() []string {
	args := make([]string, 1000)
	for i := range args {
		args[i] = strings.Repeat("a", 1000)
	}
	return args
}

// TestPythonMatchesReference runs every case on every CPython against the
// python vis-agent python runs as outside a project: that of the shared
// environment, a virtual environment of the same CPython.
func TestPythonMatchesReference(t *testing.T) {
	t.Parallel()
	bin := testenv.Binary(t)
	for _, py := range testenv.Pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			home, reference := referenceHome(t, bin, py)
			for _, c := range pythonCases {
				t.Run(c.name, func(t *testing.T) {
					compare(t, bin, py, home, reference, c)
				})
			}
		})
	}
}

// showSignals prints the disposition CPython read for every signal, sends
// the process each signal it ignores, and says it survived.
const showSignals = `import os, signal
for s in range(1, signal.NSIG):
    try:
        h = signal.getsignal(s)
    except ValueError as e:
        h = e
    print(s, int(h) if isinstance(h, int) else getattr(h, "__name__", h))
for s in sorted(signal.valid_signals()):
    if signal.getsignal(s) == signal.SIG_IGN:
        os.kill(os.getpid(), s)
print("survived")
`

// showMask prints the signals blocked in the main thread and in a thread
// the program starts.
const showMask = `import signal, threading
def blocked():
    return sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, []))
print("main", blocked())
t = threading.Thread(target=lambda: print("thread", blocked()))
t.start(); t.join()
`

// signalCases are the signal dispositions a program inherits and how it
// dies of each signal.
func signalCases() []pyCase {
	cases := []pyCase{
		{name: "inherited default", args: []string{"-c", showSignals}, inherit: inheritDefault},
		{name: "inherited ignored", args: []string{"-c", showSignals}, inherit: inheritIgnored},
		{name: "inherited blocked", args: []string{"-c", showMask}, inherit: inheritBlocked},
		{name: "inherited unblocked", args: []string{"-c", showMask}, inherit: inheritDefault},
		{name: "inherited open files limit", args: []string{"-c", "import resource, subprocess, sys\nprint(resource.getrlimit(resource.RLIMIT_NOFILE))\n" +
			"subprocess.run([sys.executable, '-c', 'import resource; print(resource.getrlimit(resource.RLIMIT_NOFILE))'])"}, inherit: inheritFewFiles},
		{name: "kill TERM ignored", args: []string{"-c", "import sys\nprint('ready', flush=True)\nsys.stdin.readline()\nprint('survived')"},
			inherit: inheritIgnored, drive: signalWhenReady(syscall.SIGTERM)},
		{name: "kill TERM default", args: []string{"-c", "import sys\nprint('ready', flush=True)\nsys.stdin.readline()\nprint('survived')"},
			inherit: inheritDefault, drive: signalWhenReady(syscall.SIGTERM)},
	}
	// With its default disposition each signal ends the program as it ends
	// python (or not at all); the stop signals would stop it instead.
	for sig := syscall.Signal(1); sig <= 64; sig++ {
		switch sig {
		case syscall.SIGKILL, syscall.SIGSTOP, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, 32, 33:
			continue
		}
		cases = append(cases, pyCase{
			name:    fmt.Sprintf("self kill %d %s", int(sig), sig),
			args:    []string{"-c", fmt.Sprintf("import os\nprint('before', flush=True)\nos.kill(os.getpid(), %d)\nprint('survived')", int(sig))},
			inherit: inheritDefault,
		})
	}
	return cases
}

// signalWhenReady waits for the program's first line, sends it sig, then
// lets it read a line and finish if it is still alive.
func signalWhenReady(sig syscall.Signal) func(t *testing.T, cmd *exec.Cmd) run {
	return func(t *testing.T, cmd *exec.Cmd) run {
		t.Helper()
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		defer stdin.Close()
		stdout, errb := startPiped(t, cmd)
		r := bufio.NewReader(stdout)
		first, _ := r.ReadString('\n')
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		// A signal that kills arrives before the line: the kernel discards
		// an ignored signal or marks the process for death when it is sent.
		io.WriteString(stdin, "go\n")
		stdin.Close()
		rest, _ := io.ReadAll(r)
		err = cmd.Wait()
		return run{first + string(rest), errb.String(), status(t, cmd, err)}
	}
}

// TestSignalsMatchReference compares, on every CPython, the signal
// dispositions a program sees and how signals end it, when it inherits
// every signal default and every signal ignored.
func TestSignalsMatchReference(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the exec helper sets dispositions with Linux's system calls")
	}
	bin := testenv.Binary(t)
	for _, py := range testenv.Pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			home, reference := referenceHome(t, bin, py)
			for _, c := range signalCases() {
				t.Run(c.name, func(t *testing.T) {
					compare(t, bin, py, home, reference, c)
				})
			}
		})
	}
}
