package pyrun

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Mode is how a python command line selects its program.
type Mode int

const (
	// ModeDefault: no program; stdin, or the interactive prompt on a terminal.
	ModeDefault Mode = iota
	ModeCode         // -c CODE
	ModeModule       // -m MODULE
	ModeFile         // FILE: a script, a folder or a zip with __main__.py
	ModeStdin        // -
	ModeUV           // uv ARG…, only right after `python` and vis options
)

// VisOptions are vis-agent's own leading options of `vis-agent python`.
type VisOptions struct {
	Shared    bool
	Env       []string // K=V or K, in order
	NoEnv     bool
	NoNetwork bool
	// AllowHosts and DenyHosts are --allow-host and --deny-host: the
	// network through a proxy to those hosts only.
	AllowHosts, DenyHosts []string
	// Active is --active: the activated environment (VIRTUAL_ENV), also
	// inside a uv project, as uv's --active.
	Active bool
}

func (v *VisOptions) addHost(flag, pattern string) {
	if flag == "--allow-host" {
		v.AllowHosts = append(v.AllowHosts, pattern)
	} else {
		v.DenyHosts = append(v.DenyHosts, pattern)
	}
}

// Args is a parsed `vis-agent python` command line.
type Args struct {
	Vis VisOptions
	// Argv is what CPython gets after argv[0]: every argument except the vis
	// options, verbatim and in order.
	Argv []string
	// Interp lists the interpreter options one by one, clusters split:
	// "-BW error" gives -B, then -W with value "error".
	Interp []InterpOption
	Help   bool
	Mode   Mode
	// Target is CODE, MODULE or FILE.
	Target string
	// Program is what follows the selector: the program's own arguments, or
	// uv's arguments in ModeUV.
	Program []string
}

// InterpOption is one interpreter option: a letter (or long name) and its
// value for -W, -X and --check-hash-based-pycs.
type InterpOption struct {
	Name  string
	Value string
}

// shown is an argument as an error message may print it: as typed, or
// quoted when it holds something a terminal would not show as typed.
func shown(arg string) string {
	for _, r := range arg {
		if !unicode.IsPrint(r) || r == utf8.RuneError {
			return strconv.Quote(arg)
		}
	}
	return arg
}

// Interpreter option letters of CPython 3.10–3.13 (-P is 3.11+; CPython
// itself refuses it on 3.10). -J is reserved for Jython and refused.
const (
	flagLetters  = "bBdEhiIOPqRsStuvVx?"
	valueLetters = "cmWX"
)

// Parse splits a `vis-agent python` command line the way CPython's
// getopt does, taking out vis-agent's own options, which may appear anywhere
// before the program selector. Everything after the selector belongs to the
// program, flags included.
func Parse(args []string) (Args, error) {
	var p Args
	onlyVis := true // nothing but vis options so far: `uv` is a selector here
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "uv" && onlyVis:
			p.Mode, p.Program = ModeUV, args[i+1:]
			return p, nil
		case a == "--shared":
			p.Vis.Shared = true
			continue
		case a == "--no-env":
			p.Vis.NoEnv = true
			continue
		case a == "--no-network":
			p.Vis.NoNetwork = true
			continue
		case a == "--active":
			p.Vis.Active = true
			continue
		case a == "--allow-host" || a == "--deny-host":
			if i+1 >= len(args) {
				return p, fmt.Errorf("%s needs a value: %s PATTERN", a, a)
			}
			i++
			p.Vis.addHost(a, args[i])
			continue
		case strings.HasPrefix(a, "--allow-host=") || strings.HasPrefix(a, "--deny-host="):
			flag, v, _ := strings.Cut(a, "=")
			p.Vis.addHost(flag, v)
			continue
		case a == "--env":
			if i+1 >= len(args) {
				return p, fmt.Errorf("--env needs a value: --env NAME=VALUE")
			}
			i++
			if err := p.addEnv(args[i]); err != nil {
				return p, err
			}
			continue
		case strings.HasPrefix(a, "--env="):
			if err := p.addEnv(strings.TrimPrefix(a, "--env=")); err != nil {
				return p, err
			}
			continue
		}
		onlyVis = false
		switch {
		case a == "--":
			// CPython: the next argument is the program file, even if it
			// starts with a dash.
			p.Argv = append(p.Argv, args[i:]...)
			if i+1 < len(args) {
				p.Mode, p.Target, p.Program = ModeFile, args[i+1], args[i+2:]
			}
			return p, nil
		case a == "-":
			p.Argv = append(p.Argv, args[i:]...)
			p.Mode, p.Program = ModeStdin, args[i+1:]
			return p, nil
		case strings.HasPrefix(a, "--"):
			// CPython matches long options exactly: no "=value" forms.
			switch a {
			case "--help":
				p.Help = true
				return p, nil
			case "--version", "--help-env", "--help-xoptions", "--help-all":
				p.Interp = append(p.Interp, InterpOption{Name: a})
				p.Argv = append(p.Argv, a)
			case "--check-hash-based-pycs":
				if i+1 >= len(args) {
					return p, fmt.Errorf("option --check-hash-based-pycs needs a value: always, default or never")
				}
				i++
				p.Interp = append(p.Interp, InterpOption{Name: a, Value: args[i]})
				p.Argv = append(p.Argv, a, args[i])
			default:
				return p, fmt.Errorf("unknown option %s", shown(a))
			}
		case strings.HasPrefix(a, "-") && a != "-":
			done, err := p.shortCluster(args, &i)
			if err != nil || done {
				return p, err
			}
		default:
			p.Argv = append(p.Argv, args[i:]...)
			p.Mode, p.Target, p.Program = ModeFile, a, args[i+1:]
			return p, nil
		}
	}
	return p, nil
}

// shortCluster parses one "-abc" argument at args[*i]. done is true when it
// held the program selector (-c or -m), which ends option parsing.
func (p *Args) shortCluster(args []string, i *int) (done bool, err error) {
	a := args[*i]
	start := *i
	for j := 1; j < len(a); j++ {
		c := a[j]
		switch {
		case strings.IndexByte(valueLetters, c) >= 0:
			value := a[j+1:]
			if value == "" {
				if *i+1 >= len(args) {
					return false, fmt.Errorf("option -%c needs an argument", c)
				}
				*i++
				value = args[*i]
			}
			p.Argv = append(p.Argv, args[start:*i+1]...)
			switch c {
			case 'c':
				p.Mode, p.Target, p.Program = ModeCode, value, args[*i+1:]
			case 'm':
				p.Mode, p.Target, p.Program = ModeModule, value, args[*i+1:]
			default:
				p.Interp = append(p.Interp, InterpOption{Name: "-" + string(c), Value: value})
				return false, nil
			}
			p.Argv = append(p.Argv, p.Program...)
			return true, nil
		case c == 'h' || c == '?':
			p.Help = true
			return true, nil
		case strings.IndexByte(flagLetters, c) >= 0:
			p.Interp = append(p.Interp, InterpOption{Name: "-" + string(c)})
		default:
			r, _ := utf8.DecodeRuneInString(a[j:])
			return false, fmt.Errorf("unknown option %s", shown("-"+string(r)))
		}
	}
	p.Argv = append(p.Argv, a)
	return false, nil
}

func (p *Args) addEnv(kv string) error {
	name, _, _ := strings.Cut(kv, "=")
	if name == "" || strings.ContainsRune(name, 0) {
		return fmt.Errorf("--env needs NAME=VALUE, got %q", kv)
	}
	if strings.HasPrefix(name, "-") {
		// `--env -c 'print(1)'`: the value was forgotten, and the program
		// selector taken for a name.
		return fmt.Errorf("--env needs NAME=VALUE, got the option %q (a name cannot start with -)", kv)
	}
	p.Vis.Env = append(p.Vis.Env, kv)
	return nil
}
