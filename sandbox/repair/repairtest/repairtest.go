// Package repairtest serves the tests of package repair and the end-to-end
// tests of vis-agent sandbox repair: the corpus of broken blocks, and one
// long-lived python per CPython version that says whether code compiles and
// dumps its AST.
package repairtest

import (
	"bufio"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

//go:embed corpus/*.txtar
var corpus embed.FS

//go:embed pyworker.py
var pyworker string

// Case is one broken block of the corpus. A corpus file holds sections
// "-- NAME.py --" (the block), "-- NAME.want --" (the expected repair,
// compared as an AST) or "-- NAME.refuse --" (it must not run), and
// optionally "-- NAME.versions --" holding "<12" or ">=12" to limit the
// CPython minor versions it runs on.
type Case struct {
	Name     string // category/name
	In, Want string
	Refuse   bool
	Versions string
}

// RunsOn reports whether the case applies to CPython 3.minor.
func (c Case) RunsOn(minor int) bool {
	v := strings.TrimSpace(c.Versions)
	switch {
	case v == "":
		return true
	case strings.HasPrefix(v, ">="):
		n, _ := strconv.Atoi(v[2:])
		return minor >= n
	case strings.HasPrefix(v, "<"):
		n, _ := strconv.Atoi(v[1:])
		return minor < n
	}
	return false
}

// Category is the corpus file a case comes from.
func (c Case) Category() string { return c.Name[:strings.IndexByte(c.Name, '/')] }

// Corpus loads every case.
func Corpus(t testing.TB) []Case {
	t.Helper()
	files, err := corpus.ReadDir("corpus")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files: %v", err)
	}
	var out []Case
	for _, f := range files {
		data, err := corpus.ReadFile(path.Join("corpus", f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		cases, err := parse(strings.TrimSuffix(f.Name(), ".txtar"), string(data))
		if err != nil {
			t.Fatalf("%s: %v", f.Name(), err)
		}
		out = append(out, cases...)
	}
	return out
}

func parse(category, data string) ([]Case, error) {
	byName := map[string]*Case{}
	var order []string
	for _, sec := range sections(data) {
		base, ext, ok := strings.Cut(sec.name, ".")
		if !ok {
			return nil, fmt.Errorf("section %q has no kind", sec.name)
		}
		c := byName[base]
		if c == nil {
			c = &Case{Name: category + "/" + base}
			byName[base] = c
			order = append(order, base)
		}
		switch ext {
		case "py":
			c.In = sec.body
		case "want":
			c.Want = sec.body
		case "refuse":
			c.Refuse = true
		case "versions":
			c.Versions = sec.body
		default:
			return nil, fmt.Errorf("unknown section kind %q", ext)
		}
	}
	var out []Case
	for _, base := range order {
		c := byName[base]
		if c.In == "" || (c.Want == "") == !c.Refuse {
			return nil, fmt.Errorf("case %s needs a .py and exactly one of .want or .refuse", base)
		}
		out = append(out, *c)
	}
	return out, nil
}

type section struct{ name, body string }

// sections splits a txtar archive: "-- name --" lines start sections, and
// text before the first one is a comment.
func sections(data string) []section {
	var out []section
	for _, line := range strings.SplitAfter(data, "\n") {
		trimmed := strings.TrimRight(line, "\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			out = append(out, section{name: strings.TrimSpace(trimmed[3 : len(trimmed)-3])})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].body += line
		}
	}
	return out
}

// Worker is one long-lived python running pyworker.py.
type Worker struct {
	Python  testenv.Python
	Minor   int
	Version string

	mu  sync.Mutex
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// Error is Python's SyntaxError (or the ValueError of a NUL byte).
type Error struct {
	Msg    string `json:"msg"`
	Lineno int    `json:"lineno"`
	Offset int    `json:"offset"`
	Text   string `json:"text"`
}

type answer struct {
	Error
	OK   bool   `json:"ok"`
	Dump string `json:"dump"`
}

var (
	workersOnce sync.Once
	workers     []*Worker
)

// Workers starts, once per test binary, one worker per CPython found (see
// testenv.Pythons). Stop them with StopWorkers from TestMain.
func Workers(t testing.TB) []*Worker {
	t.Helper()
	pythons := testenv.Pythons(t)
	workersOnce.Do(func() {
		for _, py := range pythons {
			w, err := start(py)
			if err != nil {
				fmt.Fprintf(os.Stderr, "repairtest: skipping %s: %v\n", py.Executable, err)
				continue
			}
			workers = append(workers, w)
		}
	})
	if len(workers) == 0 {
		t.Fatal("repairtest: no python worker started")
	}
	return workers
}

// Newest is the worker of the newest CPython found.
func Newest(t testing.TB) *Worker {
	ws := Workers(t)
	best := ws[0]
	for _, w := range ws[1:] {
		if w.Minor > best.Minor {
			best = w
		}
	}
	return best
}

// StopWorkers ends the workers started.
func StopWorkers() {
	for _, w := range workers {
		w.in.Close()
		w.cmd.Wait()
	}
}

func start(py testenv.Python) (*Worker, error) {
	cmd := exec.Command(py.Executable, "-I", "-X", "utf8", "-c", pyworker)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w := &Worker{Python: py, cmd: cmd, in: in, out: bufio.NewReader(outPipe)}
	var hello struct {
		Minor   int    `json:"minor"`
		Version string `json:"version"`
	}
	line, err := w.out.ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &hello)
	}
	if err != nil {
		in.Close()
		cmd.Wait()
		return nil, err
	}
	w.Minor, w.Version = hello.Minor, hello.Version
	return w, nil
}

func (w *Worker) call(op, src string) answer {
	w.mu.Lock()
	defer w.mu.Unlock()
	req, _ := json.Marshal(map[string]string{"op": op, "src": src})
	if _, err := w.in.Write(append(req, '\n')); err != nil {
		panic(fmt.Sprintf("python %s: %v", w.Version, err))
	}
	line, err := w.out.ReadBytes('\n')
	if err != nil {
		panic(fmt.Sprintf("python %s: %v", w.Version, err))
	}
	var a answer
	if err := json.Unmarshal(line, &a); err != nil {
		panic(fmt.Sprintf("python %s: %v", w.Version, err))
	}
	return a
}

// Compile returns nil when src compiles (top-level await allowed), else
// Python's error.
func (w *Worker) Compile(src string) *Error {
	a := w.call("compile", src)
	if a.OK {
		return nil
	}
	return &a.Error
}

// CompileFile returns nil when src compiles as a module file (without
// top-level await), else Python's error.
func (w *Worker) CompileFile(src string) *Error {
	a := w.call("compile_file", src)
	if a.OK {
		return nil
	}
	return &a.Error
}

// Dump returns ast.dump of src, or an error when it does not parse.
func (w *Worker) Dump(src string) (string, error) {
	a := w.call("dump", src)
	if !a.OK {
		return "", fmt.Errorf("%s (line %d)", a.Msg, a.Lineno)
	}
	return a.Dump, nil
}
