package uvwrap

import (
	"regexp"
	"strings"
	"testing"
)

// releasePlatforms are the platforms vis-agent is released for, each with
// the wheel architecture and the form of platform tag it runs: glibc
// manylinux on Linux.
var releasePlatforms = map[string]struct {
	arch string
	tag  *regexp.Regexp
}{
	"linux-amd64":  {"x86_64", regexp.MustCompile(`^(manylinux_2_[0-9]+|manylinux2014)_x86_64$`)},
	"linux-arm64":  {"aarch64", regexp.MustCompile(`^(manylinux_2_[0-9]+|manylinux2014)_aarch64$`)},
	"darwin-amd64": {"x86_64", regexp.MustCompile(`^macosx_[0-9]+_[0-9]+_x86_64$`)},
	"darwin-arm64": {"arm64", regexp.MustCompile(`^macosx_[0-9]+_[0-9]+_arm64$`)},
}

// platformTags returns the platform tags of a wheel file name, e.g.
// ["manylinux_2_17_x86_64", "manylinux2014_x86_64"].
func platformTags(file string) []string {
	parts := strings.Split(strings.TrimSuffix(file, ".whl"), "-")
	return strings.Split(parts[len(parts)-1], ".")
}

func TestPinnedCoversEveryReleasePlatform(t *testing.T) {
	if _, err := parsePin(pinText); err != nil {
		t.Fatalf("uv.pin: %v", err)
	}
	p := Pinned()
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(p.Version) {
		t.Errorf("version %q is not X.Y.Z", p.Version)
	}
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	for plat, want := range releasePlatforms {
		w, ok := p.Wheels[plat]
		if !ok {
			t.Errorf("uv.pin has no wheel for %s", plat)
			continue
		}
		if !hex64.MatchString(w.SHA256) {
			t.Errorf("%s: sha256 %q is not 64 lowercase hex digits", plat, w.SHA256)
		}
		if prefix := "uv-" + p.Version + "-py3-none-"; !strings.HasPrefix(w.File, prefix) || !strings.HasSuffix(w.File, ".whl") {
			t.Errorf("%s: %s is not %s*.whl", plat, w.File, prefix)
		}
		tags := platformTags(w.File)
		// fetch-uv.sh asks pip for the first tag: it must be one this
		// platform runs.
		if !want.tag.MatchString(tags[0]) {
			t.Errorf("%s: first platform tag of %s is %s, want %s", plat, w.File, tags[0], want.tag)
		}
		// Every tag must be for the same architecture (musllinux beside
		// manylinux is fine: uv's aarch64 build is static).
		for _, tag := range tags {
			if !strings.HasSuffix(tag, "_"+want.arch) {
				t.Errorf("%s: %s carries tag %s, not for %s", plat, w.File, tag, want.arch)
			}
		}
	}
	for plat := range p.Wheels {
		if _, ok := releasePlatforms[plat]; !ok {
			t.Errorf("uv.pin pins %s, which is not a release platform", plat)
		}
	}
}

func TestPinnedReturnsCopies(t *testing.T) {
	a := Pinned()
	delete(a.Wheels, "linux-amd64")
	a.Wheels["x-y"] = Wheel{}
	b := Pinned()
	if _, ok := b.Wheels["linux-amd64"]; !ok {
		t.Error("deleting from one Pinned() result changed the next")
	}
	if _, ok := b.Wheels["x-y"]; ok {
		t.Error("adding to one Pinned() result changed the next")
	}
}

func TestParsePin(t *testing.T) {
	const sum = "d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19"
	good := "# comment\n\n  linux-amd64 uv-1.2.3-py3-none-manylinux_2_17_x86_64.whl " + sum + "\nversion 1.2.3\n"
	p, err := parsePin(good)
	if err != nil {
		t.Fatalf("parsePin(good): %v", err)
	}
	if p.Version != "1.2.3" || p.Wheels["linux-amd64"] != (Wheel{"uv-1.2.3-py3-none-manylinux_2_17_x86_64.whl", sum}) {
		t.Errorf("parsePin(good) = %+v", p)
	}

	line := func(plat, file, sha string) string { return plat + " " + file + " " + sha + "\n" }
	okLine := line("linux-amd64", "uv-1.2.3-py3-none-manylinux_2_17_x86_64.whl", sum)
	for name, text := range map[string]string{
		"empty":             "",
		"no version":        okLine,
		"no wheels":         "version 1.2.3\n",
		"two versions":      "version 1.2.3\nversion 1.2.4\n" + okLine,
		"version no value":  "version\n" + okLine,
		"version not x.y.z": "version latest\n" + okLine,
		"duplicate":         "version 1.2.3\n" + okLine + okLine,
		"two fields":        "version 1.2.3\nlinux-amd64 " + sum + "\n",
		"four fields":       "version 1.2.3\n" + strings.TrimSuffix(okLine, "\n") + " extra\n",
		"short sha":         "version 1.2.3\n" + line("linux-amd64", "uv-1.2.3-py3-none-manylinux_2_17_x86_64.whl", sum[:63]),
		"upper sha":         "version 1.2.3\n" + line("linux-amd64", "uv-1.2.3-py3-none-manylinux_2_17_x86_64.whl", strings.ToUpper(sum)),
		"bad platform":      "version 1.2.3\n" + line("linux_amd64", "uv-1.2.3-py3-none-manylinux_2_17_x86_64.whl", sum),
		"other version":     "version 1.2.4\n" + okLine,
		"not a wheel":       "version 1.2.3\n" + line("linux-amd64", "uv-1.2.3.tar.gz", sum),
		"no platform tag":   "version 1.2.3\n" + line("linux-amd64", "uv-1.2.3-py3-none-.whl", sum),
	} {
		if p, err := parsePin(text); err == nil {
			t.Errorf("%s: parsePin accepted %q as %+v", name, text, p)
		}
	}
}
