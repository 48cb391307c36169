package tui

import (
	"strings"
	"testing"
	"time"

	"charm.land/lipgloss/v2"
)

// mdTree is a line of Markdown as the viewer reads it, its emphasis
// written as tags.
func mdTree(s string) string {
	nodes := mdNodes(s)
	mdMatch(nodes)
	tag := map[int]string{1: "em", 2: "strong"}
	var b strings.Builder
	for _, n := range nodes {
		switch {
		case n.code:
			b.WriteString("<code>" + n.text + "</code>")
		case n.delim != 0:
			for _, w := range n.closes {
				b.WriteString("</" + tag[w] + ">")
			}
			b.WriteString(strings.Repeat(string(n.delim), n.n))
			for _, w := range n.opens {
				b.WriteString("<" + tag[w] + ">")
			}
		default:
			b.WriteString(n.text)
		}
	}
	return b.String()
}

func TestMarkdownInline(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"*em* and _em_", "<em>em</em> and <em>em</em>"},
		{"**strong** and __strong__", "<strong>strong</strong> and <strong>strong</strong>"},
		{"***both***", "<em><strong>both</strong></em>"},
		{"**bold *and em* inside**", "<strong>bold <em>and em</em> inside</strong>"},
		{"*a **b** c*", "<em>a <strong>b</strong> c</em>"},
		{"snake_case_name and __init__", "snake_case_name and <strong>init</strong>"},
		{"2 * 3 * 4 and a * b", "2 * 3 * 4 and a * b"},
		{"*unclosed and **half*", "*unclosed and *<em>half</em>"},
		{"`code *not em*` and ``a ` b``", "<code>code *not em*</code> and <code>a ` b</code>"},
		{"` spaced `", "<code>spaced</code>"},
		{"`unclosed and *em*", "`unclosed and <em>em</em>"},
		{`\*not em\* and \_not\_`, "*not em* and _not_"},
		{"*foo*bar and foo*bar*", "<em>foo</em>bar and foo<em>bar</em>"},
		{"_foo_bar", "_foo_bar"},
		{"**foo*", "*<em>foo</em>"},
		{"*(a)*", "<em>(a)</em>"},
	} {
		if got := mdTree(c.in); got != c.want {
			t.Errorf("%q reads as %q, want %q", c.in, got, c.want)
		}
	}
	th := newTheme(true)
	plain := lipgloss.NewStyle()
	if got := th.inline("Sales *rose* by **12%**, see `x`.", plain); stripped(got) != "Sales rose by 12%, see x." ||
		!strings.Contains(got, "\x1b[3mrose") || !strings.Contains(got, "\x1b[1m12%") {
		t.Errorf("inline: %q", got)
	}
	// a heading keeps its own style around emphasis
	if got := th.inline("A *b* c", th.mdHeading); strings.Count(got, "\x1b[1;") != 3 || stripped(got) != "A b c" {
		t.Errorf("emphasis in a heading: %q", got)
	}
}

// TestMarkdownInlineIsBounded: lines built to make the delimiter search
// slow render in bounded time (attachments are written by block code).
func TestMarkdownInlineIsBounded(t *testing.T) {
	th := newTheme(true)
	var lines []string
	for _, unit := range []string{"*a ", "`` ` ", "_a_ *", "** "} {
		lines = append(lines, strings.Repeat(unit, maxInline/len(unit)))
	}
	start := time.Now()
	for i := 0; i < 50; i++ {
		for _, l := range lines {
			th.inline(l, lipgloss.NewStyle())
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("200 long hostile lines took %v", d)
	}
}
