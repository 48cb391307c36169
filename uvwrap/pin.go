package uvwrap

import (
	_ "embed"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"sync"
)

// pinText is uv.pin, the same file fetch-uv.sh reads.
//
//go:embed uv.pin
var pinText string

// Pin is the uv vis-agent needs.
type Pin struct {
	// Version is uv's version, e.g. "0.13.9", as `uv --version` prints it.
	Version string
	// Wheels holds each release platform's wheel, keyed by GOOS-GOARCH
	// ("linux-amd64", "darwin-arm64", ...).
	Wheels map[string]Wheel
}

// Wheel is one PyPI wheel of the pinned uv.
type Wheel struct {
	// File is the wheel's exact file name on PyPI.
	File string
	// SHA256 is the wheel file's sha256, lowercase hex.
	SHA256 string
}

var parsedPin = sync.OnceValue(func() Pin {
	p, err := parsePin(pinText)
	if err != nil {
		// uv.pin is compiled in; the package's tests parse it.
		panic("uvwrap: embedded uv.pin: " + err.Error())
	}
	return p
})

// Pinned returns the uv pinned in uv.pin. Each call returns its own copy of
// Wheels.
func Pinned() Pin {
	p := parsedPin()
	p.Wheels = maps.Clone(p.Wheels)
	return p
}

// parsePin reads uv.pin: blank lines and # comments, one `version X.Y.Z`
// line, and `PLATFORM FILE SHA256` lines.
func parsePin(text string) (Pin, error) {
	// Compiled here, not at package init: every vis-agent start would pay.
	versionRE := regexp.MustCompile(`^[0-9]+(\.[0-9]+)+$`)
	platformRE := regexp.MustCompile(`^[a-z0-9]+-[a-z0-9]+$`)
	sha256RE := regexp.MustCompile(`^[0-9a-f]{64}$`)
	p := Pin{Wheels: map[string]Wheel{}}
	lines := map[string]int{}
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if f[0] == "version" {
			if len(f) != 2 {
				return Pin{}, fmt.Errorf("line %d: want `version X.Y.Z`", n)
			}
			if p.Version != "" {
				return Pin{}, fmt.Errorf("line %d: second version line", n)
			}
			if !versionRE.MatchString(f[1]) {
				return Pin{}, fmt.Errorf("line %d: version %q is not X.Y.Z", n, f[1])
			}
			p.Version = f[1]
			continue
		}
		if len(f) != 3 {
			return Pin{}, fmt.Errorf("line %d: want `PLATFORM WHEEL-FILE SHA256`, got %d fields", n, len(f))
		}
		plat, file, sum := f[0], f[1], f[2]
		if !platformRE.MatchString(plat) {
			return Pin{}, fmt.Errorf("line %d: platform %q is not GOOS-GOARCH", n, plat)
		}
		if prev, dup := lines[plat]; dup {
			return Pin{}, fmt.Errorf("line %d: platform %s already pinned on line %d", n, plat, prev)
		}
		if !sha256RE.MatchString(sum) {
			return Pin{}, fmt.Errorf("line %d: sha256 of %s is not 64 lowercase hex digits", n, plat)
		}
		lines[plat] = n
		p.Wheels[plat] = Wheel{File: file, SHA256: sum}
	}
	if p.Version == "" {
		return Pin{}, fmt.Errorf("no `version X.Y.Z` line")
	}
	if len(p.Wheels) == 0 {
		return Pin{}, fmt.Errorf("no wheels")
	}
	// The version line may come anywhere, so file names are checked last.
	prefix := "uv-" + p.Version + "-py3-none-"
	for plat, w := range p.Wheels {
		tags := strings.TrimSuffix(strings.TrimPrefix(w.File, prefix), ".whl")
		if !strings.HasPrefix(w.File, prefix) || !strings.HasSuffix(w.File, ".whl") || tags == "" {
			return Pin{}, fmt.Errorf("line %d: %s is not a uv %s py3-none wheel (%s*.whl)", lines[plat], w.File, p.Version, prefix)
		}
	}
	return p, nil
}
