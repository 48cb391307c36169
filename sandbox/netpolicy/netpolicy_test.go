package netpolicy

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseRefusesBadPatterns(t *testing.T) {
	for _, bad := range []string{"", "a..b", "exa mple.com", "pypi.org:0", "pypi.org:70000", "pypi.org:x", "*.com", "[::1", "[::1]x", "@nope", "*.", "::1:x:y:z:q"} {
		if _, err := Parse([]string{bad}, nil, ""); err == nil {
			t.Errorf("Parse(%q) accepted it", bad)
		}
	}
}

func TestCheckName(t *testing.T) {
	r, err := Parse(
		[]string{"pypi.org", "*.githubusercontent.com", "api.example.com:8443", "203.0.113.7", "198.51.100.0/24", "[2001:db8::1]:443", "Example.NET."},
		[]string{"bad.githubusercontent.com", "198.51.100.9"}, "")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		host string
		port int
		ok   bool
		why  string
	}{
		{"pypi.org", 443, true, ""},
		{"PYPI.org.", 80, true, ""},
		{"evil.pypi.org", 443, false, "not in the session's allow list (to allow it: --allow-host evil.pypi.org)"},
		{"pypi.org.evil.com", 443, false, "not in the session's allow list"},
		{"raw.githubusercontent.com", 443, true, ""},
		{"a.b.githubusercontent.com", 443, true, ""},
		{"githubusercontent.com", 443, false, "allow list"},
		{"xgithubusercontent.com", 443, false, "allow list"},
		{"bad.githubusercontent.com", 443, false, "denied (--deny-host bad.githubusercontent.com)"},
		{"api.example.com", 8443, true, ""},
		{"api.example.com", 443, false, "allow list"},
		{"example.net", 443, true, ""},
		{"203.0.113.7", 22, true, ""},
		{"203.0.113.8", 443, false, "allow list"},
		{"198.51.100.3", 443, true, ""},
		{"198.51.100.9", 443, false, "denied (--deny-host 198.51.100.9)"},
		{"::ffff:198.51.100.3", 443, true, ""},
		{"[2001:db8::1]", 443, true, ""},
		{"2001:db8::1", 80, false, "host 2001:db8::1 is not in the session's allow list (to allow it: --allow-host 2001:db8::1)"},
		{"bad host", 443, false, "is not a host name"},
	}
	for _, c := range cases {
		err := r.CheckName(c.host, c.port)
		if (err == nil) != c.ok || err != nil && !strings.Contains(err.Error(), c.why) {
			t.Errorf("CheckName(%q, %d) = %v, want ok=%v %q", c.host, c.port, err, c.ok, c.why)
		}
	}
}

func TestDenyWinsOverAllow(t *testing.T) {
	r, err := Parse([]string{"*.example.com", "10.0.0.0/8"}, []string{"*.example.com:22", "10.1.0.0/16"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if r.CheckName("a.example.com", 22) == nil || r.CheckName("a.example.com", 443) != nil {
		t.Error("a deny with a port refuses that port only")
	}
	if r.CheckAddr("x", netip.MustParseAddr("10.1.2.3"), 443) == nil || r.CheckAddr("x", netip.MustParseAddr("10.2.2.3"), 443) != nil {
		t.Error("a denied range wins over an allowed one")
	}
}

func TestCheckAddrRefusesInternalUnlessListed(t *testing.T) {
	r, err := Parse([]string{"*.example.com", "127.0.0.5", "192.168.1.0/24:5432"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"127.0.0.1", "::1", "10.0.0.1", "172.16.3.4", "192.168.1.1", "169.254.169.254", "fe80::1", "fd00::1", "0.0.0.0", "::", "100.64.0.1", "100.127.255.254", "224.0.0.1", "::ffff:127.0.0.1", "255.255.255.255"} {
		err := r.CheckAddr("db.example.com", netip.MustParseAddr(a), 443)
		if err == nil || !strings.Contains(err.Error(), "local or private address") {
			t.Errorf("CheckAddr(%s) = %v, want the private refusal", a, err)
		}
	}
	for _, a := range []string{"93.184.216.34", "2606:2800:220:1::1", "100.128.0.1", "100.63.255.255"} {
		if err := r.CheckAddr("www.example.com", netip.MustParseAddr(a), 443); err != nil {
			t.Errorf("CheckAddr(%s) = %v", a, err)
		}
	}
	if r.CheckAddr("x", netip.MustParseAddr("127.0.0.5"), 80) != nil {
		t.Error("a listed loopback address is allowed")
	}
	if r.CheckAddr("x", netip.MustParseAddr("192.168.1.9"), 5432) != nil || r.CheckAddr("x", netip.MustParseAddr("192.168.1.9"), 22) == nil {
		t.Error("a listed private range is allowed at its port only")
	}
}

func TestSets(t *testing.T) {
	got, err := Expand([]string{"@pypi", "@github"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "pypi.org files.pythonhosted.org github.com *.github.com *.githubusercontent.com" {
		t.Errorf("Expand = %q", got)
	}
	got, err = Expand([]string{"@pypi"}, "https://mirror.example.org:8443/simple")
	if err != nil || strings.Join(got, " ") != "mirror.example.org:8443 files.pythonhosted.org" {
		t.Errorf("Expand with a mirror = %q, %v", got, err)
	}
	r, err := Parse([]string{"@pypi"}, nil, "")
	if err != nil || r.CheckName("files.pythonhosted.org", 443) != nil || r.Empty() {
		t.Errorf("@pypi does not allow PyPI's files host: %v", err)
	}
	got, err = Expand([]string{"@pypi"}, "http://127.0.0.1:8080/simple")
	if err != nil || strings.Join(got, " ") != "127.0.0.1:8080 files.pythonhosted.org" {
		t.Errorf("Expand with a loopback index = %q, %v", got, err)
	}
	// A local index needs no host.
	got, err = Expand([]string{"@pypi", "@github"}, "file:///srv/wheels/simple")
	if err != nil || strings.Join(got, " ") != "github.com *.github.com *.githubusercontent.com" {
		t.Errorf("Expand with a file:// index = %q, %v", got, err)
	}
}

// TestRefusalsNameTheWayIn: a refusal names the host and how the user
// allows it: the flag, and the setting when the rules have one.
func TestRefusalsNameTheWayIn(t *testing.T) {
	r, err := Parse([]string{"pypi.org"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	r.Setting = "sandbox.allow_hosts"
	for _, c := range []struct {
		err  error
		want string
	}{
		{r.CheckName("other.test", 443), "vis-agent: host other.test is not in the session's allow list (to allow it: --allow-host other.test or sandbox.allow_hosts)"},
		{r.CheckName("::ffff:10.0.0.1", 80), "vis-agent: host 10.0.0.1 is not in the session's allow list (to allow it: --allow-host 10.0.0.1 or sandbox.allow_hosts)"},
		{r.CheckAddr("pypi.org", netip.MustParseAddr("127.0.0.1"), 8080), "vis-agent: host pypi.org resolves to 127.0.0.1, a local or private address, which the session reaches only when the allow list names the address (to allow it: --allow-host 127.0.0.1:8080 or sandbox.allow_hosts)"},
		{r.CheckAddr("pypi.org", netip.MustParseAddr("fd00::1"), 443), "(to allow it: --allow-host [fd00::1]:443 or sandbox.allow_hosts)"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("got %v, want %q", c.err, c.want)
		}
	}
	// What the message says to give is a pattern that allows it.
	for _, way := range []string{"127.0.0.1:8080", "[fd00::1]:443"} {
		if _, err := Parse([]string{way}, nil, ""); err != nil {
			t.Errorf("the way in %q is not a pattern: %v", way, err)
		}
	}
}
