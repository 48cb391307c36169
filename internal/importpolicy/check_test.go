package importpolicy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// graph is the module's packages (short paths) with the packages of the
// module each imports directly.
type graph map[string][]string

// treeGraph is the module's import graph as go list sees it.
func treeGraph(t *testing.T) graph {
	t.Helper()
	g := graph{}
	for path, p := range list(t) {
		if !ours(path) {
			continue
		}
		imports := []string{}
		for _, imp := range p.Imports {
			if ours(imp) {
				imports = append(imports, short(imp))
			}
		}
		g[short(path)] = imports
	}
	return g
}

// An edge is one package importing another.
type edge struct{ from, to string }

// A rule forbids the packages matching from to import (or, with reach,
// to reach through any chain of imports) a package matching to, but for
// those matching except and the known edges. Patterns: "*" any package,
// "x/" any package under x, else one package.
type rule struct {
	name             string
	from, fromExcept []string
	to, except       []string
	reach            bool
	// known are the edges that break the rule today, each with its TODO.
	known []edge
}

func match(patterns []string, p string) bool {
	return slices.ContainsFunc(patterns, func(pat string) bool {
		return pat == "*" || pat == p || strings.HasSuffix(pat, "/") && strings.HasPrefix(p, pat)
	})
}

func (r rule) applies(p string) bool { return match(r.from, p) && !match(r.fromExcept, p) }

func (r rule) forbids(dep string) bool { return match(r.to, dep) && !match(r.except, dep) }

// checkAllowList says what g does that the allow list does not let it:
// each package missing from allowed (and which imports brought it), each
// import missing from its importer's line, and each line naming a package
// g does not have.
func checkAllowList(g graph, allowed map[string][]string) []string {
	var problems []string
	for _, p := range slices.Sorted(maps.Keys(g)) {
		line, listed := allowed[p]
		if !listed {
			problems = append(problems, fmt.Sprintf("%s is not in the policy (imported by %s): give it a line in allowed, with what it may import",
				p, orNone(importers(g, p))))
			continue
		}
		for _, imp := range g[p] {
			if !slices.Contains(line, imp) {
				problems = append(problems, fmt.Sprintf("%s imports %s, which its line in allowed does not list", p, imp))
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(allowed)) {
		if _, ok := g[p]; !ok {
			problems = append(problems, fmt.Sprintf("allowed lists %s, which is not a package of the module: remove its line", p))
		}
	}
	return problems
}

// importers are the packages of g that import p.
func importers(g graph, p string) []string {
	var by []string
	for _, q := range slices.Sorted(maps.Keys(g)) {
		if slices.Contains(g[q], p) {
			by = append(by, q)
		}
	}
	return by
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// checkRules says which rules g breaks, each with the chain of imports
// that breaks it.
func checkRules(g graph, rules []rule) []string {
	var problems []string
	for _, r := range rules {
		for _, p := range slices.Sorted(maps.Keys(g)) {
			if !r.applies(p) {
				continue
			}
			if !r.reach {
				for _, imp := range g[p] {
					if r.forbids(imp) && !slices.Contains(r.known, edge{p, imp}) {
						problems = append(problems, fmt.Sprintf("%s imports %s: %s", p, imp, r.name))
					}
				}
				continue
			}
			for _, chain := range reached(g, p, r.forbids) {
				problems = append(problems, fmt.Sprintf("%s: %s", strings.Join(chain, " → "), r.name))
			}
		}
	}
	return problems
}

// reached are the chains of imports from p to each package forbidden
// finds, one (a shortest) per package.
func reached(g graph, p string, forbidden func(string) bool) [][]string {
	from := map[string]string{p: ""}
	queue := []string{p}
	var chains [][]string
	for len(queue) > 0 {
		q := queue[0]
		queue = queue[1:]
		for _, imp := range g[q] {
			if _, seen := from[imp]; seen {
				continue
			}
			from[imp] = q
			queue = append(queue, imp)
			if forbidden(imp) {
				chain := []string{imp}
				for at := q; at != ""; at = from[at] {
					chain = append([]string{at}, chain...)
				}
				chains = append(chains, chain)
			}
		}
	}
	return chains
}

// staleKnown are the known edges of the rules that g no longer has: done,
// so their lines go.
func staleKnown(g graph, rules []rule) []string {
	var problems []string
	for _, r := range rules {
		for _, e := range r.known {
			if !slices.Contains(g[e.from], e.to) {
				problems = append(problems, fmt.Sprintf("%s no longer imports %s: remove the known exception from the rule %q (and the edge from allowed)", e.from, e.to, r.name))
			}
		}
	}
	return problems
}

func report(t *testing.T, problems []string) {
	t.Helper()
	for _, p := range problems {
		t.Error(p)
	}
}

// TestPolicy: the tree imports what the allow list lets it, no more, and
// keeps the rules.
func TestPolicy(t *testing.T) {
	g := treeGraph(t)
	report(t, checkAllowList(g, allowed))
	report(t, checkRules(g, rules))
	report(t, staleKnown(g, rules))
}

// TestPolicyKeepsTheRules: no line of the allow list breaks a rule, so a
// line added to let an import in cannot let a rule go.
func TestPolicyKeepsTheRules(t *testing.T) {
	report(t, checkRules(allowed, rules))
}

// TestPolicyFailsNewCode is the test of the test: a tree with a package the
// policy does not list, and imports it does not allow, fails, naming them.
func TestPolicyFailsNewCode(t *testing.T) {
	g := graph{}
	for p, imports := range allowed {
		g[p] = slices.Clone(imports)
	}
	g["internal/newlib"] = []string{}
	g["tui"] = append(g["tui"], "internal/newlib")
	g["sandbox/protocol"] = append(g["sandbox/protocol"], "internal/paths")
	g["pyembed/findpython"] = append(g["pyembed/findpython"], "internal/config")

	got := append(checkAllowList(g, allowed), checkRules(g, rules)...)
	for _, want := range []string{
		"internal/newlib is not in the policy (imported by tui)",
		"sandbox/protocol imports internal/paths, which its line in allowed does not list",
		"sandbox/protocol imports internal/paths: protocol is at the bottom",
		"pyembed/findpython imports internal/config, which its line in allowed does not list",
		"pyembed → pyembed/findpython → internal/config: the loader knows no policy",
	} {
		if !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, want) }) {
			t.Errorf("no problem starts with %q; the checker said:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if t.Failed() {
		return
	}
	delete(g, "cli")
	if got := checkAllowList(g, allowed); !slices.Contains(got, "allowed lists cli, which is not a package of the module: remove its line") {
		t.Errorf("a line for a package that went is not reported: %q", got)
	}
}
