package pyrun

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		args    []string
		want    Args
		wantErr string
	}{
		{args: nil, want: Args{}},
		{args: []string{"-c", "pass", "-x", "--shared"}, want: Args{
			Argv: []string{"-c", "pass", "-x", "--shared"}, Mode: ModeCode, Target: "pass", Program: []string{"-x", "--shared"}}},
		{args: []string{"-cpass", "a"}, want: Args{
			Argv: []string{"-cpass", "a"}, Mode: ModeCode, Target: "pass", Program: []string{"a"}}},
		{args: []string{"-BIc", "pass"}, want: Args{
			Argv: []string{"-BIc", "pass"}, Mode: ModeCode, Target: "pass", Program: []string{},
			Interp: []InterpOption{{Name: "-B"}, {Name: "-I"}}}},
		{args: []string{"-m", "json.tool", "-h"}, want: Args{
			Argv: []string{"-m", "json.tool", "-h"}, Mode: ModeModule, Target: "json.tool", Program: []string{"-h"}}},
		{args: []string{"-Wignore", "-X", "utf8", "-OO", "s.py", "-m"}, want: Args{
			Argv: []string{"-Wignore", "-X", "utf8", "-OO", "s.py", "-m"}, Mode: ModeFile, Target: "s.py", Program: []string{"-m"},
			Interp: []InterpOption{{"-W", "ignore"}, {"-X", "utf8"}, {Name: "-O"}, {Name: "-O"}}}},
		{args: []string{"-", "x"}, want: Args{Argv: []string{"-", "x"}, Mode: ModeStdin, Program: []string{"x"}}},
		{args: []string{"--", "-s.py", "y"}, want: Args{
			Argv: []string{"--", "-s.py", "y"}, Mode: ModeFile, Target: "-s.py", Program: []string{"y"}}},
		{args: []string{"--"}, want: Args{Argv: []string{"--"}}},
		{args: []string{"--shared", "--env", "A=1", "--env=B", "--no-env", "--no-network", "-c", "pass"}, want: Args{
			Vis:  VisOptions{Shared: true, Env: []string{"A=1", "B"}, NoEnv: true, NoNetwork: true},
			Argv: []string{"-c", "pass"}, Mode: ModeCode, Target: "pass", Program: []string{}}},
		{args: []string{"-B", "--shared", "-c", "pass"}, want: Args{
			Vis: VisOptions{Shared: true}, Argv: []string{"-B", "-c", "pass"}, Mode: ModeCode, Target: "pass", Program: []string{},
			Interp: []InterpOption{{Name: "-B"}}}},
		{args: []string{"uv", "sync", "--frozen"}, want: Args{Mode: ModeUV, Program: []string{"sync", "--frozen"}}},
		{args: []string{"--shared", "uv", "sync"}, want: Args{Vis: VisOptions{Shared: true}, Mode: ModeUV, Program: []string{"sync"}}},
		// After an interpreter option, uv is a script name.
		{args: []string{"-B", "uv"}, want: Args{Argv: []string{"-B", "uv"}, Mode: ModeFile, Target: "uv", Program: []string{},
			Interp: []InterpOption{{Name: "-B"}}}},
		{args: []string{"--version"}, want: Args{Argv: []string{"--version"}, Interp: []InterpOption{{Name: "--version"}}}},
		{args: []string{"--check-hash-based-pycs", "never", "-c", "1"}, want: Args{
			Argv: []string{"--check-hash-based-pycs", "never", "-c", "1"}, Mode: ModeCode, Target: "1", Program: []string{},
			Interp: []InterpOption{{"--check-hash-based-pycs", "never"}}}},
		{args: []string{"-h", "-Z"}, want: Args{Help: true}},
		{args: []string{"-Bh"}, want: Args{Help: true, Interp: []InterpOption{{Name: "-B"}}}},
		{args: []string{"--help"}, want: Args{Help: true}},
		{args: []string{"-Z"}, wantErr: "unknown option -Z"},
		{args: []string{"-BZ"}, wantErr: "unknown option -Z"},
		{args: []string{"-é"}, wantErr: "unknown option -é"},
		{args: []string{"--nope"}, wantErr: "unknown option --nope"},
		{args: []string{"--version=2"}, wantErr: "unknown option --version=2"},
		{args: []string{"-c"}, wantErr: "option -c needs an argument"},
		{args: []string{"-BX"}, wantErr: "option -X needs an argument"},
		{args: []string{"--env"}, wantErr: "--env needs a value"},
		{args: []string{"--env", "=v"}, wantErr: "--env needs NAME=VALUE"},
		{args: []string{"--env", "-c", "print(1)"}, wantErr: "a name cannot start with -"},
		{args: []string{"--check-hash-based-pycs"}, wantErr: "needs a value"},
	}
	for _, tt := range tests {
		got, err := Parse(tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Parse(%q) error = %v, want an error containing %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.args, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Parse(%q)\n got %+v\nwant %+v", tt.args, got, tt.want)
		}
	}
}

// FuzzParse: any command line parses or is refused, never
// panics, and the arguments CPython gets are the input minus vis options,
// in order.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"-c\x00pass", "-BIc\x00x", "--shared\x00uv\x00sync", "--env\x00A=1\x00-m\x00m", "-W\x00", "--\x00-x", "-\x00-c", "-é", "--check-hash-based-pycs"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		p, err := Parse(args)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q is not one line", err)
			}
			return
		}
		if p.Help || p.Mode == ModeUV {
			return
		}
		// Argv is a subsequence of args, and everything after the selector
		// is kept verbatim.
		j := 0
		for _, a := range args {
			if j < len(p.Argv) && a == p.Argv[j] {
				j++
			}
		}
		if j != len(p.Argv) {
			t.Fatalf("Argv %q is not a subsequence of %q", p.Argv, args)
		}
		if n := len(p.Program); n > 0 && !reflect.DeepEqual(p.Argv[len(p.Argv)-n:], p.Program) {
			t.Fatalf("program arguments %q not at the end of Argv %q", p.Program, p.Argv)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	args := []string{"--shared", "-B", "-X", "utf8", "-W", "ignore", "-c", "import sys; print(sys.argv)", "a", "-b", "--c"}
	for b.Loop() {
		if _, err := Parse(args); err != nil {
			b.Fatal(err)
		}
	}
}
