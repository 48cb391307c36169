package install

import (
	"strings"
	"testing"
)

func TestParseRequirementAccepts(t *testing.T) {
	for spec, name := range map[string]string{
		"pandas":                                "pandas",
		"  numpy>=2 ":                           "numpy",
		"numpy >= 2, < 3":                       "numpy",
		"requests[socks,security]~=2.31":        "requests",
		"Foo.Bar_baz-9==1.0.post1.dev2+local.7": "Foo.Bar_baz-9",
		"pkg==1.*":                              "pkg",
		"pkg!=2.0.*":                            "pkg",
		"pkg (>=1.0)":                           "pkg",
		"pkg===weird-1":                         "pkg",
		"pkg[]":                                 "pkg",
		`tomli; python_version < "3.11"`:        "tomli",
		`pywin32>=300; sys_platform == 'win32' and (platform_machine == "x86_64" or extra == "x")`: "pywin32",
		`pkg; 'linux' in sys_platform`:     "pkg",
		`pkg; "x" not in platform_release`: "pkg",
		"v1":                               "v1",
	} {
		r, err := ParseRequirement(spec)
		if err != nil {
			t.Errorf("ParseRequirement(%q): %v", spec, err)
			continue
		}
		if r.Name != name || r.Text != strings.TrimSpace(spec) {
			t.Errorf("ParseRequirement(%q) = %+v, want name %q", spec, r, name)
		}
	}
}

func TestParseRequirementRefuses(t *testing.T) {
	for spec, why := range map[string]string{
		"":                                   "empty",
		"-e .":                               "an option",
		"--index-url=http://evil/simple":     "an option",
		"-r requirements.txt":                "an option",
		"--extra-index-url http://x":         "an option",
		"git+https://github.com/a/b":         "a URL",
		"https://example.com/pkg-1.0.tar.gz": "a URL",
		"file:///etc/passwd":                 "a URL",
		"pkg @ https://example.com/pkg.whl":  "a URL",
		"pkg@git+ssh://x":                    "a URL",
		"pkg @ file:///tmp/x":                "a URL",
		"./local":                            "a path",
		"../x":                               "a path",
		"/abs/pkg":                           "a path",
		"dir/sub":                            "a path",
		"~/pkg":                              "a path",
		"pkg-1.0-py3-none-any.whl":           "a path",
		"pkg.tar.gz":                         "a path",
		"C:\\pkg":                            "a path",
		"pkg==1.0 --hash=sha256:00":          "unexpected",
		"pkg ==":                             "a version expected",
		"pkg>=1.*":                           "prefix match",
		"pkg==1.0; os_name":                  "marker comparison",
		"pkg; evil == 'x'":                   "marker name",
		"pkg; python_version < '3":           "unclosed string",
		"pkg[extra":                          "expected",
		"pkg extra":                          "version comparison",
		"pkg==1.0 x":                         "unexpected",
		"pkg\x00":                            "printable ASCII",
		"pkg\n--index-url x":                 "printable ASCII",
		"pkg==1.0\u00e9":                     "printable ASCII",
		"_pkg":                               "a name expected",
		strings.Repeat("a", MaxSpec+1):       "longer than",
	} {
		_, err := ParseRequirement(spec)
		if err == nil {
			t.Errorf("ParseRequirement(%q) accepted it", spec)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, why) || !strings.HasPrefix(msg, "install: ") || strings.Contains(msg, "\n") ||
			!strings.Contains(msg, "install() takes requirements only") {
			t.Errorf("ParseRequirement(%q) = %q, want one line naming %q", spec, msg, why)
		}
	}
}

func TestParsePins(t *testing.T) {
	got, err := ParsePins([]string{"numpy==2.2.6", "six==1.17.0", "legacy==1.0-foo-bar"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "numpy==2.2.6 six==1.17.0" {
		t.Errorf("pins = %q, want the PEP 440 ones", got)
	}
	for _, bad := range []string{"numpy", "numpy>=2", "x==1\n--index-url=http://e", "x==1 ; y", "-e==1", "a @ b==1"} {
		if _, err := ParsePins([]string{bad}); err == nil {
			t.Errorf("ParsePins(%q) accepted it", bad)
		}
	}
}

func TestLocalIndex(t *testing.T) {
	for u, want := range map[string]bool{
		"file:///srv/wheels":           true,
		"http://127.0.0.1:8080/simple": true,
		"https://127.9.9.9/simple":     true,
		"http://[::1]:9/simple":        true,
		"http://localhost:3141/root":   true,
		"https://pypi.org/simple":      false,
		"http://10.0.0.1/simple":       false,
		"http://127.0.0.1.evil.com/x":  false,
		"ftp://127.0.0.1/x":            false,
		"":                             false,
	} {
		if got := LocalIndex(u); got != want {
			t.Errorf("LocalIndex(%q) = %t, want %t", u, got, want)
		}
	}
}

func TestNormalize(t *testing.T) {
	if got := Normalize("Foo.Bar__baz-9"); got != "foo-bar-baz-9" {
		t.Errorf("Normalize = %q", got)
	}
}
