package tui

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // the viewer describes GIF, JPEG and PNG images
	_ "image/jpeg"
	_ "image/png"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// maxViewLines is how many lines of a text the viewer shows.
const maxViewLines = 5000

// viewer shows one version of an attachment: what it is, its content
// (text and Markdown rendered, images described, other bytes summarised)
// and its comments.
type viewer struct {
	d       Descriptor  // with its comments, once read
	data    []byte      // its first maxViewBytes bytes
	img     image.Image // the image they hold, when whole
	err     string
	loading bool
	top     int      // the first line shown
	lines   []string // rendered for width
	width   int
}

// render is the viewer's lines at width, cached.
func (v *viewer) render(th *theme, versions []Descriptor, width int) []string {
	if v.width == width && v.lines != nil {
		return v.lines
	}
	d := v.d
	var raw []string
	prose := func(s string) { raw = append(raw, strings.Split(ansi.Wrap(s, width, ""), "\n")...) }
	title := fmt.Sprintf("%s  v%d", d.Filename, d.Version)
	if n := len(versions); n > 1 {
		title += fmt.Sprintf(" (versions %d–%d: [ and ] switch)", versions[0].Version, versions[n-1].Version)
	}
	prose(th.panelTitle.Render(title))
	facts := []string{}
	if d.Kind != "" {
		facts = append(facts, d.Kind)
	}
	facts = append(facts, d.MediaType, sizeText(d.Size))
	if d.Commentable {
		facts = append(facts, "commentable (c)")
	} else {
		facts = append(facts, "read-only")
	}
	prose(th.info.Render(strings.Join(facts, " · ")))
	prose(th.info.Render(fmt.Sprintf("attached by block %d of session %s, %s", d.Block, d.Session, d.Created.UTC().Format("2006-01-02 15:04:05 UTC"))))
	prose(th.info.Render("sha256 " + d.SHA256))
	raw = append(raw, th.rule.Render(strings.Repeat("─", width)))
	switch {
	case v.loading:
		raw = append(raw, th.info.Render("reading…"))
	case v.err != "":
		prose(th.problem.Render("could not read it: " + v.err))
	default:
		raw = append(raw, content(th, d, v.data, v.img, width)...)
	}
	raw = append(raw, th.rule.Render(strings.Repeat("─", width)))
	switch {
	case len(d.Comments) > 0:
		prose(th.panelTitle.Render(fmt.Sprintf("Comments (%d)", len(d.Comments))))
		for _, c := range d.Comments {
			who := c.Author
			if who == "" {
				who = "someone"
			}
			prose(th.info.Render(who + ", " + c.Created.UTC().Format("2006-01-02 15:04")))
			for _, l := range strings.Split(c.Text, "\n") {
				prose("  " + printable(l))
			}
		}
	case d.Commentable:
		prose(th.info.Render("No comments yet: c adds one."))
	default:
		prose(th.info.Render("Read-only: this version takes no comments."))
	}
	v.lines, v.width = raw, width
	return raw
}

// view is height lines of the viewer from v.top (clamped), the last one
// its keys.
func (v *viewer) view(th *theme, versions []Descriptor, width, height int) []string {
	lines := v.render(th, versions, width)
	body := max(0, height-1)
	v.top = max(0, min(v.top, len(lines)-body))
	shown := lines[v.top:min(len(lines), v.top+body)]
	out := make([]string, 0, height)
	out = append(out, shown...)
	for len(out) < body {
		out = append(out, "")
	}
	keys := fmt.Sprintf("lines %d–%d of %d · ↑/↓ PgUp/PgDn scroll · [ ] version · c comment · Esc closes",
		min(v.top+1, len(lines)), v.top+len(shown), len(lines))
	if height > 0 {
		out = append(out, th.hint.Render(ansi.Truncate(keys, width, "…")))
	}
	return out
}

// content is what the bytes of d are, width columns wide: an image's
// format and pixel size (and a preview in shades when img holds it), a
// text (Python highlighted, Markdown rendered), or for other bytes their
// type, size and first bytes.
func content(th *theme, d Descriptor, data []byte, img image.Image, width int) []string {
	if cfg, format, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
		lines := []string{fmt.Sprintf("%s image, %d × %d pixels, %s", strings.ToUpper(format), cfg.Width, cfg.Height, sizeText(d.Size))}
		if img == nil {
			return append(lines, th.info.Render("(no preview: over 1 MiB, or not decodable)"))
		}
		return append(lines, shades(img, min(width, previewCols), th.dark)...)
	}
	if !isText(d, data) {
		head := data[:min(len(data), 256)]
		lines := []string{fmt.Sprintf("binary data (%s), %s; its first %d bytes:", d.MediaType, sizeText(d.Size), len(head))}
		for _, l := range strings.Split(strings.TrimRight(hex.Dump(head), "\n"), "\n") {
			lines = append(lines, ansi.Truncate(th.info.Render(l), width, "…"))
		}
		return lines
	}
	text := strings.ToValidUTF8(string(data), "\uFFFD")
	if len(data) == maxViewBytes && int64(len(data)) < d.Size {
		// a cut in the middle of a character shows as one replacement
		text += "\n…"
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	more := 0
	if len(lines) > maxViewLines {
		more, lines = len(lines)-maxViewLines, lines[:maxViewLines]
	}
	text = strings.Join(lines, "\n")
	var out []string
	switch textKind(d) {
	case "python":
		out = hardwrap(th.highlight(expandTabs(text)), width)
	case "markdown":
		out = th.markdown(text, width)
	default:
		var plain []string
		for _, l := range lines {
			plain = append(plain, printable(l))
		}
		out = hardwrap(plain, width)
	}
	if more > 0 {
		out = append(out, th.fold.Render(fmt.Sprintf("… %s more lines (vis-agent sandbox attachment get %s writes it all)", thousands(more), d.Filename)))
	}
	return out
}

// isText is whether d reads as text: a text media type, or bytes that are
// UTF-8 without NULs.
func isText(d Descriptor, data []byte) bool {
	mt := strings.ToLower(d.MediaType)
	if strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "json") || strings.HasSuffix(mt, "xml") || strings.HasSuffix(mt, "yaml") {
		return true
	}
	head := data[:min(len(data), 8192)]
	for i := 0; i < 3 && len(head) > 0 && !utf8.Valid(head); i++ {
		head = head[:len(head)-1] // a character cut at the sample's end
	}
	return utf8.Valid(head) && bytes.IndexByte(head, 0) < 0
}

// textKind is how a text is shown: "python", "markdown" or "plain".
func textKind(d Descriptor) string {
	mt := strings.ToLower(d.MediaType)
	switch ext := strings.ToLower(path.Ext(d.Filename)); {
	case ext == ".py" || strings.Contains(mt, "python"):
		return "python"
	case ext == ".md" || ext == ".markdown" || strings.Contains(mt, "markdown"):
		return "markdown"
	}
	return "plain"
}

func expandTabs(s string) string { return strings.ReplaceAll(s, "\t", "    ") }

// hardwrap cuts lines at width.
func hardwrap(lines []string, width int) []string {
	var out []string
	for _, l := range lines {
		out = append(out, strings.Split(ansi.Hardwrap(l, width, true), "\n")...)
	}
	return out
}

// markdown is Markdown rendered for the terminal, width columns wide:
// headings, lists, quotes and rules styled, code blocks kept as they are
// (Python ones highlighted), inline code and bold set apart.
func (t *theme) markdown(src string, width int) []string {
	var out []string
	prose := func(s string) { out = append(out, strings.Split(ansi.Wrap(s, width, ""), "\n")...) }
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		l := printable(lines[i])
		trimmed := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence, lang := trimmed[:3], strings.ToLower(strings.TrimSpace(trimmed[3:]))
			var code []string
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), fence); i++ {
				code = append(code, expandTabs(lines[i]))
			}
			if lang == "python" || lang == "py" || lang == "pycon" {
				code = t.highlight(strings.Join(code, "\n"))
			} else {
				for j, c := range code {
					code[j] = t.mdCode.Render(printable(c))
				}
			}
			for _, c := range hardwrap(code, max(1, width-2)) {
				out = append(out, t.rule.Render("▏ ")+c)
			}
		case strings.HasPrefix(trimmed, "#"):
			level := len(trimmed) - len(strings.TrimLeft(trimmed, "#"))
			text := strings.TrimSpace(trimmed[level:])
			st := t.mdHeading
			if level == 1 {
				st = st.Underline(true)
			}
			prose(st.Render(text))
		case trimmed == "---" || trimmed == "***" || trimmed == "___":
			out = append(out, t.rule.Render(strings.Repeat("─", width)))
		case strings.HasPrefix(trimmed, "> ") || trimmed == ">":
			prose(t.rule.Render("│ ") + t.info.Render(t.inline(strings.TrimPrefix(strings.TrimPrefix(trimmed, ">"), " "))))
		case len(trimmed) > 1 && strings.ContainsRune("-*+", rune(trimmed[0])) && trimmed[1] == ' ':
			indent := strings.Repeat(" ", len(l)-len(strings.TrimLeft(l, " ")))
			prose(indent + "• " + t.inline(trimmed[2:]))
		default:
			prose(t.inline(l))
		}
	}
	return out
}

// inline styles `code` and **bold** within a line of Markdown.
func (t *theme) inline(s string) string {
	var b strings.Builder
	for s != "" {
		i := strings.IndexAny(s, "`*")
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		s = s[i:]
		mark, st := "`", t.mdCode
		if strings.HasPrefix(s, "**") {
			mark, st = "**", t.mdBold
		}
		if s[0] == '*' && mark == "`" {
			b.WriteByte('*') // a lone star
			s = s[1:]
			continue
		}
		end := strings.Index(s[len(mark):], mark)
		if end < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(st.Render(s[len(mark) : len(mark)+end]))
		s = s[len(mark)+end+len(mark):]
	}
	return b.String()
}

// A preview is at most previewCols × previewRows characters.
const (
	previewCols = 64
	previewRows = 24
)

// decodeWhole is the image in data when data is all of d and decodes.
func decodeWhole(d Descriptor, data []byte) image.Image {
	if int64(len(data)) != d.Size {
		return nil
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil
	}
	return img
}

// shades draws img at most cols wide in five shades of one colour, so
// that it shows without colours too: a character a pixel sampled from each
// cell, two rows of pixels to a line as characters are twice as high as
// wide; dark is whether the terminal is dark (light pixels drawn dense).
func shades(img image.Image, cols int, dark bool) []string {
	b := img.Bounds()
	if b.Dx() == 0 || b.Dy() == 0 || cols < 1 {
		return nil
	}
	cols = min(cols, b.Dx())
	rows := max(1, cols*b.Dy()/b.Dx()/2)
	if rows > previewRows {
		rows = previewRows
		cols = max(1, min(cols, rows*2*b.Dx()/b.Dy()))
	}
	ramp := []rune(" ░▒▓█")
	out := make([]string, 0, rows)
	for y := 0; y < rows; y++ {
		line := make([]rune, cols)
		for x := range line {
			px := img.At(b.Min.X+x*b.Dx()/cols, b.Min.Y+y*b.Dy()/rows)
			gray := color.GrayModel.Convert(px).(color.Gray).Y
			if _, _, _, a := px.RGBA(); a < 0x8000 {
				gray = 0 // transparent: the background
				if !dark {
					gray = 255
				}
			}
			level := int(gray) * len(ramp) / 256
			if !dark {
				level = len(ramp) - 1 - level
			}
			line[x] = ramp[level]
		}
		out = append(out, string(line))
	}
	return out
}
