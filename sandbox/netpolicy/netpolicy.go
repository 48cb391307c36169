// Package netpolicy decides which hosts a session with an allow list may
// reach: the patterns of --allow-host and --deny-host (or the user's
// [sandbox] allow_hosts and deny_hosts), matched against the name a
// client asked the proxy for and against every address the proxy
// resolved it to. It is pure logic; the proxy (sandbox/proxy) asks it.
package netpolicy

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// DefaultIndex is the package index @pypi means when the user names none.
const DefaultIndex = "https://pypi.org/simple"

// Set expands a named set (@pypi, @github) into its patterns; indexURL is
// the package index in use ("" for PyPI's). A local index (file://) is
// no host: @pypi is then empty.
func Set(name, indexURL string) ([]string, error) {
	switch name {
	case "@pypi":
		if indexURL == "" || indexURL == DefaultIndex || strings.HasPrefix(indexURL, "https://pypi.org/") {
			return []string{"pypi.org", "files.pythonhosted.org"}, nil
		}
		u, err := url.Parse(indexURL)
		if err == nil && u.Scheme == "file" {
			return []string{}, nil
		}
		if err != nil || u.Hostname() == "" {
			return nil, fmt.Errorf("@pypi: the package index %q has no host", indexURL)
		}
		// A mirror serves its files itself, or from PyPI's files host.
		return []string{u.Host, "files.pythonhosted.org"}, nil
	case "@github":
		return []string{"github.com", "*.github.com", "*.githubusercontent.com"}, nil
	}
	return nil, fmt.Errorf("%s: unknown set (there are @pypi and @github)", name)
}

// pattern is one parsed entry: a name (exact, or every name under a
// suffix when wildcard), or an address prefix (an IP is a /32 or /128);
// port 0 matches every port.
type pattern struct {
	text     string
	name     string
	wildcard bool
	prefix   netip.Prefix
	port     int
}

// Rules are a session's allow and deny lists, parsed.
type Rules struct {
	allow, deny []pattern
	// Setting is the user's setting that lists allowed hosts besides
	// --allow-host ("": none), which a refusal names as a way to allow.
	Setting string
}

// Parse checks and parses the lists; sets are expanded with indexURL.
// An error names the entry and what is wrong with it.
func Parse(allow, deny []string, indexURL string) (Rules, error) {
	var r Rules
	var err error
	if r.allow, err = parseAll(allow, indexURL); err != nil {
		return Rules{}, err
	}
	if r.deny, err = parseAll(deny, indexURL); err != nil {
		return Rules{}, err
	}
	return r, nil
}

// Expand is the lists with the named sets replaced by their patterns,
// for a policy that carries concrete patterns only.
func Expand(list []string, indexURL string) ([]string, error) {
	var out []string
	for _, s := range list {
		if strings.HasPrefix(s, "@") {
			set, err := Set(s, indexURL)
			if err != nil {
				return nil, err
			}
			out = append(out, set...)
			continue
		}
		if _, err := parse(s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func parseAll(list []string, indexURL string) ([]pattern, error) {
	expanded, err := Expand(list, indexURL)
	if err != nil {
		return nil, err
	}
	var out []pattern
	for _, s := range expanded {
		p, err := parse(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// parse reads one pattern: NAME, *.NAME, an IP (IPv6 in brackets when a
// port follows) or a CIDR, each with an optional :PORT.
func parse(s string) (pattern, error) {
	p := pattern{text: s}
	bad := func(why string) (pattern, error) {
		return pattern{}, fmt.Errorf("host pattern %q: %s", s, why)
	}
	if s == "" {
		return bad("empty")
	}
	if pfx, err := netip.ParsePrefix(s); err == nil {
		p.prefix = pfx.Masked()
		return p, nil
	}
	if ip, err := netip.ParseAddr(s); err == nil {
		p.prefix = netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen())
		return p, nil
	}
	host := s
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1 {
		h, port, err := splitPort(s)
		if err != nil {
			return bad(err.Error())
		}
		host, p.port = h, port
	}
	if pfx, err := netip.ParsePrefix(host); err == nil {
		p.prefix = pfx.Masked()
		return p, nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		p.prefix = netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen())
		return p, nil
	}
	if strings.HasPrefix(host, "[") {
		return bad("not an IPv6 address in brackets")
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		p.wildcard, host = true, rest
	}
	name, err := canonicalName(host)
	if err != nil {
		return bad(err.Error())
	}
	if p.wildcard && !strings.Contains(name, ".") {
		return bad("a wildcard needs a domain with a dot after *. (e.g. *.example.com)")
	}
	p.name = name
	return p, nil
}

// splitPort splits HOST:PORT or [IPv6]:PORT.
func splitPort(s string) (string, int, error) {
	var host, port string
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return "", 0, errors.New("no closing ]")
		}
		host, port = s[1:end], strings.TrimPrefix(s[end+1:], ":")
		if s[end+1:] != "" && !strings.HasPrefix(s[end+1:], ":") {
			return "", 0, errors.New("text after ]")
		}
		if port == "" {
			return host, 0, nil
		}
	} else {
		i := strings.LastIndexByte(s, ':')
		host, port = s[:i], s[i+1:]
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", 0, fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	return host, n, nil
}

// canonicalName is a host name lower-cased, without a trailing dot,
// checked for the characters a DNS name has.
func canonicalName(s string) (string, error) {
	s = strings.TrimSuffix(strings.ToLower(s), ".")
	if s == "" || len(s) > 253 {
		return "", errors.New("not a host name")
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return "", errors.New("not a host name (an empty or overlong label)")
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("not a host name (%q)", c)
			}
		}
	}
	return s, nil
}

// matchName reports whether p matches the canonical name at port.
func (p pattern) matchName(name string, port int) bool {
	if p.name == "" || p.port != 0 && p.port != port {
		return false
	}
	if p.wildcard {
		return strings.HasSuffix(name, "."+p.name)
	}
	return name == p.name
}

// matchAddr reports whether p (an address pattern) covers ip at port.
func (p pattern) matchAddr(ip netip.Addr, port int) bool {
	return p.prefix.IsValid() && (p.port == 0 || p.port == port) && p.prefix.Contains(ip)
}

// Empty reports whether the rules allow nothing.
func (r Rules) Empty() bool { return len(r.allow) == 0 }

// Refusal is a refused request: Error is the line a client sees.
type Refusal struct{ Message string }

func (e *Refusal) Error() string { return e.Message }

// notListed is the refusal of a host the allow list does not name.
func (r Rules) notListed(host string) *Refusal {
	return &Refusal{fmt.Sprintf("vis-agent: host %s is not in the session's allow list (%s)", host, r.wayIn(host))}
}

// wayIn says how the user allows pattern: the flag, and the setting.
func (r Rules) wayIn(pattern string) string {
	way := "to allow it: --allow-host " + pattern
	if r.Setting != "" {
		way += " or " + r.Setting
	}
	return way
}

// CheckName decides on the host a client asked for (a name or an IP
// literal) and its port, before anything is resolved: a deny entry wins,
// then an allow entry must match. Addresses are checked again, after
// resolution, by CheckAddr.
func (r Rules) CheckName(host string, port int) error {
	var match func(pattern) bool
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		ip = ip.Unmap()
		host = ip.String()
		match = func(p pattern) bool { return p.matchAddr(ip, port) }
	} else {
		name, err := canonicalName(host)
		if err != nil {
			return &Refusal{fmt.Sprintf("vis-agent: %q is not a host name", host)}
		}
		match = func(p pattern) bool { return p.matchName(name, port) }
	}
	for _, d := range r.deny {
		if match(d) {
			return &Refusal{fmt.Sprintf("vis-agent: host %s is denied (--deny-host %s)", host, d.text)}
		}
	}
	for _, a := range r.allow {
		if match(a) {
			return nil
		}
	}
	return r.notListed(host)
}

// CheckAddr decides on one address host resolved to: a deny entry
// covering it wins; an address of the machine, its networks or the cloud
// (loopback, private, link-local such as 169.254.169.254, CGNAT,
// unspecified, multicast) needs an allow entry that covers it, because a
// name's owner chooses what it resolves to.
func (r Rules) CheckAddr(host string, ip netip.Addr, port int) error {
	ip = ip.Unmap()
	if err := r.CheckDenied(host, ip, port); err != nil {
		return err
	}
	if !Internal(ip) {
		return nil
	}
	for _, a := range r.allow {
		if a.matchAddr(ip, port) {
			return nil
		}
	}
	return &Refusal{fmt.Sprintf("vis-agent: host %s resolves to %s, a local or private address, which the session reaches only when the allow list names the address (%s)",
		host, ip, r.wayIn(netip.AddrPortFrom(ip, uint16(port)).String()))}
}

// CheckDenied refuses an address host resolved to that a deny entry
// covers.
func (r Rules) CheckDenied(host string, ip netip.Addr, port int) error {
	ip = ip.Unmap()
	for _, d := range r.deny {
		if d.matchAddr(ip, port) {
			return &Refusal{fmt.Sprintf("vis-agent: host %s resolves to %s, denied (--deny-host %s)", host, ip, d.text)}
		}
	}
	return nil
}

// Internal reports whether ip belongs to this machine, a private network
// or a link (not the internet).
func Internal(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.Is4() {
		a := ip.As4()
		switch {
		case a[0] == 0, a == [4]byte{255, 255, 255, 255}:
			return true
		case a[0] == 100 && a[1]&0xc0 == 64:
			return true // carrier-grade NAT's shared space, 100.64.0.0/10 (RFC 6598)
		}
	}
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast()
}
