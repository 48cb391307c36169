package client

import (
	"slices"
	"strings"
	"testing"
)

func TestParseTargetCommand(t *testing.T) {
	connect := []string{"--session", "s", "--workspace", "/w x/it's"}
	quoted := `'sandbox' 'connect' '--session' 's' '--workspace' '/w x/it'\''s'`
	for _, c := range []struct {
		url  string
		want []string
	}{
		{"ssh://box", []string{"ssh", "-T", "--", "box", "'vis-agent' " + quoted}},
		{"ssh://me@box.example.org:2222/opt/vis/vis-agent", []string{"ssh", "-T", "-l", "me", "-p", "2222", "--", "box.example.org", "'/opt/vis/vis-agent' " + quoted}},
		{"ssh://[::1]:22", []string{"ssh", "-T", "-p", "22", "--", "::1", "'vis-agent' " + quoted}},
		{"ssh://10.0.0.7/", []string{"ssh", "-T", "--", "10.0.0.7", "'vis-agent' " + quoted}},
		{"ssh://box/opt/a%20b/vis-agent", []string{"ssh", "-T", "--", "box", "'/opt/a b/vis-agent' " + quoted}},
		{"kubectl://team/pod-0", append([]string{"kubectl", "exec", "-i", "--namespace=team", "pod-0", "--", "vis-agent", "sandbox", "connect"}, connect...)},
		{"kubectl://team/pod-0/py?context=prod-eu", append([]string{"kubectl", "--context=prod-eu", "exec", "-i", "--namespace=team", "--container=py", "pod-0", "--", "vis-agent", "sandbox", "connect"}, connect...)},
		{"docker://vis_1", append([]string{"docker", "exec", "-i", "vis_1", "vis-agent", "sandbox", "connect"}, connect...)},
		{"podman://abc123", append([]string{"podman", "exec", "-i", "abc123", "vis-agent", "sandbox", "connect"}, connect...)},
	} {
		tg, err := ParseTarget(c.url)
		if err != nil {
			t.Errorf("ParseTarget(%q): %v", c.url, err)
			continue
		}
		if got := tg.Command(connect); !slices.Equal(got, c.want) {
			t.Errorf("ParseTarget(%q).Command =\n%q\nwant\n%q", c.url, got, c.want)
		}
	}
}

// No part of a URL may become an option of the engine, or a second word
// of the remote shell's command line.
func TestParseTargetRefuses(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"box", "use ssh://"},
		{"ftp://box", `unknown scheme "ftp"`},
		{"ssh://-oProxyCommand=touch%20x", "not a URL"},
		{"ssh://-oProxyCommand=x", "invalid host"},
		{"ssh://-p2222", "invalid host"},
		{"ssh://box%20-o", "not a URL"},
		{"ssh://bo;x", "invalid host"},
		{"ssh://bo$x", "invalid host"},
		{"ssh://.box", "invalid host"},
		{"ssh://", "invalid host"},
		{"ssh://-l@box", "invalid user"},
		{"ssh://a;b@box", "invalid user"},
		{"ssh://me:secret@box", "no password"},
		{"ssh://box:0", "invalid port"},
		{"ssh://box:99999", "invalid port"},
		{"ssh://box:", "empty port"},
		{"ssh://box:-1", "not a URL"},
		{"ssh://box?x=1", "no query"},
		{"ssh://box/a%0Ab", "control character"},
		{"kubectl://ns", "namespace/pod"},
		{"kubectl://ns/pod/c/extra", "namespace/pod"},
		{"kubectl://ns/-pod", "invalid name"},
		{"kubectl://ns/pod/--privileged", "invalid name"},
		{"kubectl://ns/pod?context=-x", "invalid context"},
		{"kubectl://ns/pod?namespace=x", "unknown query"},
		{"kubectl://ns/pod?context=a&context=b", "unknown query"},
		{"kubectl://ns/po d", "invalid name"},
		{"docker://-it", "container name"},
		{"docker://a/b", "container name"},
		{"docker://", "container name"},
		{"podman://x y", "container name"},
	} {
		_, err := ParseTarget(c.url)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseTarget(%q) = %v, want an error with %q", c.url, err, c.want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"": "''", "a b": "'a b'", "it's": `'it'\''s'`, "$(x)`y`": "'$(x)`y`'"} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
