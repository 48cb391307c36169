// Package install installs packages for a sandbox session: a block's
// install("pandas", "numpy>=2") becomes one run of the pinned uv, by the
// session's host, outside the jail, into the session's own package folder
// (its layer over the environment the session uses).
//
// What a block asks for is a requirement and nothing else: a name, extras,
// version specifiers and markers (PEP 508 without its URL form), read by the
// strict grammar in this file. Paths, URLs, VCS links and options are
// refused, so the host never reads or fetches for the block what the block
// could not reach itself; only the user's index is asked.
package install

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// MaxSpec bounds one requirement's length; MaxSpecs their number in one
// call.
const (
	MaxSpec  = 500
	MaxSpecs = 100
)

// Requirement is a requirement that passed the grammar: its name (as
// written) and the whole text, which is what uv is given.
type Requirement struct {
	Name string
	Text string
}

// SpecError is a spec that is not a requirement: one line saying what it
// is and what install() takes.
type SpecError struct {
	Spec, Why string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("install: %s is %s; install() takes requirements only (a name, extras, versions, markers), such as install(\"pandas>=2\")",
		quoteSpec(e.Spec), e.Why)
}

// quoteSpec is the spec as a Python literal, cut to a readable length.
func quoteSpec(s string) string {
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// ParseRequirement reads spec as a PEP 508 requirement without a URL.
func ParseRequirement(spec string) (Requirement, error) {
	fail := func(why string) (Requirement, error) { return Requirement{}, &SpecError{spec, why} }
	t := strings.TrimSpace(spec)
	switch {
	case t == "":
		return fail("empty")
	case len(spec) > MaxSpec:
		return fail(fmt.Sprintf("longer than %d characters", MaxSpec))
	case strings.HasPrefix(t, "-"):
		return fail("an option, not a requirement")
	case strings.Contains(t, "://") || strings.HasPrefix(t, "git+") || strings.HasPrefix(t, "hg+") ||
		strings.HasPrefix(t, "svn+") || strings.HasPrefix(t, "bzr+") || strings.HasPrefix(t, "file:"):
		return fail("a URL or version-control link, not a requirement")
	case strings.HasPrefix(t, ".") || strings.HasPrefix(t, "~") || strings.ContainsAny(t, "/\\") ||
		hasAnySuffix(strings.ToLower(t), ".whl", ".tar.gz", ".zip", ".tgz", ".tar.bz2", ".egg"):
		return fail("a path, not a requirement")
	}
	for _, r := range spec {
		if r < 0x20 || r > 0x7e {
			return fail("not plain printable ASCII")
		}
	}
	p := &parser{s: spec}
	name, err := p.requirement()
	if err != nil {
		return fail(err.Error())
	}
	return Requirement{Name: name, Text: t}, nil
}

func hasAnySuffix(s string, suffixes ...string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

// parser reads one requirement; each method consumes what it reads.
type parser struct {
	s   string
	pos int
}

func (p *parser) errorf(format string, a ...any) error {
	return fmt.Errorf("not a requirement: "+format+" at column %d", append(a, p.pos+1)...)
}

func (p *parser) ws() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
		p.pos++
	}
}

func (p *parser) peek(lit string) bool { return strings.HasPrefix(p.s[p.pos:], lit) }

func (p *parser) eat(lit string) bool {
	if p.peek(lit) {
		p.pos += len(lit)
		return true
	}
	return false
}

// patterns are the grammar's regular expressions, compiled at first use:
// the package is linked into every vis-agent start, whose package
// initializers must stay cheap.
type patterns struct {
	name, version, arbitrary, markerName, pin, distLine, separators *regexp.Regexp
}

var (
	compileOnce sync.Once
	compiled    patterns
)

func grammar() *patterns {
	compileOnce.Do(func() {
		compiled = patterns{
			name: regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?`),
			// A PEP 440 public or local version, with the optional
			// trailing .* of a prefix match.
			version: regexp.MustCompile(`^(?i:v?(?:[0-9]+!)?[0-9]+(?:\.[0-9]+)*` +
				`(?:[-_.]?(?:a|b|c|rc|alpha|beta|pre|preview)[-_.]?[0-9]*)?` +
				`(?:-[0-9]+|[-_.]?(?:post|rev|r)[-_.]?[0-9]*)?` +
				`(?:[-_.]?dev[-_.]?[0-9]*)?` +
				`(?:\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?)(?:\.\*)?`),
			// The operand of === (compared as a string).
			arbitrary:  regexp.MustCompile(`^[A-Za-z0-9._+!-]+`),
			markerName: regexp.MustCompile(`^[a-z_]+`),
			// One pin of the base environment: name==version.
			pin: regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?==[A-Za-z0-9._+!-]{1,100}$`),
			// uv's line for a distribution it installed (+) or removed (-).
			distLine:   regexp.MustCompile(`^ ([+-]) ([A-Za-z0-9._-]+)==(\S+)$`),
			separators: regexp.MustCompile(`[-_.]+`),
		}
	})
	return &compiled
}

// markerVar reports whether name is an environment marker's name.
func markerVar(name string) bool {
	switch name {
	case "python_version", "python_full_version", "os_name", "sys_platform", "platform_release",
		"platform_system", "platform_version", "platform_machine", "platform_python_implementation",
		"implementation_name", "implementation_version", "extra":
		return true
	}
	return false
}

// comparisons, longest first so that <= is not read as <.
var comparisons = [...]string{"===", "~=", "==", "!=", "<=", ">=", "<", ">"}

func (p *parser) name() (string, error) {
	m := grammar().name.FindString(p.s[p.pos:])
	if m == "" {
		return "", p.errorf("a name expected")
	}
	p.pos += len(m)
	return m, nil
}

// requirement: name [extras] [versions] [; marker]
func (p *parser) requirement() (string, error) {
	p.ws()
	name, err := p.name()
	if err != nil {
		return "", err
	}
	p.ws()
	if p.eat("[") {
		p.ws()
		for !p.eat("]") {
			if _, err := p.name(); err != nil {
				return "", p.errorf("an extra's name expected")
			}
			p.ws()
			if !p.eat(",") && !p.peek("]") {
				return "", p.errorf("',' or ']' expected")
			}
			p.ws()
		}
		p.ws()
	}
	if p.peek("@") {
		return "", fmt.Errorf("a URL requirement (name @ URL), not a requirement from the index")
	}
	if p.eat("(") {
		if err := p.versions(); err != nil {
			return "", err
		}
		p.ws()
		if !p.eat(")") {
			return "", p.errorf("')' expected")
		}
	} else if p.pos < len(p.s) && p.s[p.pos] != ';' {
		if err := p.versions(); err != nil {
			return "", err
		}
	}
	p.ws()
	if p.eat(";") {
		if err := p.markerOr(); err != nil {
			return "", err
		}
	}
	p.ws()
	if p.pos != len(p.s) {
		return "", p.errorf("unexpected %q", p.s[p.pos:p.pos+1])
	}
	return name, nil
}

// versions: one or more comma-separated comparisons.
func (p *parser) versions() error {
	for {
		p.ws()
		op := p.comparison()
		if op == "" {
			return p.errorf("a version comparison (==, >=, ~=, ...) expected")
		}
		p.ws()
		pattern := grammar().version
		if op == "===" {
			pattern = grammar().arbitrary
		}
		v := pattern.FindString(p.s[p.pos:])
		if v == "" {
			return p.errorf("a version expected")
		}
		if strings.HasSuffix(v, ".*") && op != "==" && op != "!=" {
			return p.errorf("a prefix match (.*) with %s", op)
		}
		p.pos += len(v)
		p.ws()
		if !p.eat(",") {
			return nil
		}
	}
}

func (p *parser) comparison() string {
	for _, op := range comparisons {
		if p.eat(op) {
			return op
		}
	}
	return ""
}

func (p *parser) markerOr() error {
	for {
		if err := p.markerAnd(); err != nil {
			return err
		}
		p.ws()
		if !p.keyword("or") {
			return nil
		}
	}
}

func (p *parser) markerAnd() error {
	for {
		if err := p.markerExpr(); err != nil {
			return err
		}
		p.ws()
		if !p.keyword("and") {
			return nil
		}
	}
}

// keyword eats word when a space or a parenthesis follows it.
func (p *parser) keyword(word string) bool {
	rest := p.s[p.pos:]
	if !strings.HasPrefix(rest, word) || len(rest) == len(word) || !strings.ContainsRune(" \t(\"'", rune(rest[len(word)])) {
		return false
	}
	p.pos += len(word)
	return true
}

func (p *parser) markerExpr() error {
	p.ws()
	if p.eat("(") {
		if err := p.markerOr(); err != nil {
			return err
		}
		p.ws()
		if !p.eat(")") {
			return p.errorf("')' expected in the marker")
		}
		return nil
	}
	if err := p.markerValue(); err != nil {
		return err
	}
	p.ws()
	switch {
	case p.comparison() != "":
	case p.keyword("in"):
	case p.keyword("not"):
		p.ws()
		if !p.keyword("in") {
			return p.errorf("'not in' expected in the marker")
		}
	default:
		return p.errorf("a marker comparison expected")
	}
	p.ws()
	return p.markerValue()
}

// markerValue: an environment marker's name or a quoted string.
func (p *parser) markerValue() error {
	if p.pos < len(p.s) && (p.s[p.pos] == '"' || p.s[p.pos] == '\'') {
		q := p.s[p.pos]
		end := strings.IndexByte(p.s[p.pos+1:], q)
		if end < 0 {
			return p.errorf("an unclosed string in the marker")
		}
		p.pos += end + 2
		return nil
	}
	m := grammar().markerName.FindString(p.s[p.pos:])
	if !markerVar(m) {
		return p.errorf("a marker name (python_version, sys_platform, ...) or a quoted string expected")
	}
	p.pos += len(m)
	return nil
}
