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
	"slices"
	"strings"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/vis-agent/vis-agent/internal/termtext"
)

// maxViewLines is how many lines of a text the viewer shows.
const maxViewLines = 5000

// viewer shows one version of an attachment on the whole screen: what it
// is, its content (text and Markdown rendered, images described, other
// bytes summarised) and its comments. It exists while it has the keys:
// the attachments list opens it, Esc closes it. While open it follows the
// store (follow).
type viewer struct {
	s       *shared
	shown   bool
	d       Descriptor  // with its comments, once read
	data    []byte      // its first maxViewBytes bytes
	img     image.Image // the image they hold, when whole
	err     string
	loading bool
	top     int          // the first line shown
	atts    []Descriptor // the store's list: the versions there are
	lines   []string     // rendered at linesW (nil: render again)
	linesW  int
	width   int
	height  int
}

func newViewer(s *shared) *viewer { return &viewer{s: s} }

// Update takes keys while the viewer is open, the wheel, the version it
// asked the store for, a comment saved on it, another session and a new
// theme.
func (v *viewer) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		return v.key(msg)
	case tea.MouseWheelMsg:
		switch msg.Button {
		case tea.MouseWheelUp:
			v.top -= 3
		case tea.MouseWheelDown:
			v.top += 3
		}
	case openedMsg:
		v.opened(msg)
	case commentedMsg:
		if msg.err == nil && v.shown && v.d.ID == msg.d.ID {
			return v.read(v.d) // with the new comment, where it was scrolled
		}
	case sessionMsg:
		v.atts = nil
	case themeMsg:
		v.lines = nil
	}
	return nil
}

// key handles a key while the viewer is open.
func (v *viewer) key(k tea.KeyPressMsg) tea.Cmd {
	page := max(1, v.height-2)
	switch k.String() {
	case "esc", "q":
		v.s.post(closeMsg{v})
	case "up", "k":
		v.top--
	case "down", "j":
		v.top++
	case "pgup", "b":
		v.top -= page
	case "pgdown", "space", " ":
		v.top += page
	case "home", "g":
		v.top = 0
	case "end", "G":
		v.top = 1 << 30
	case "[", "]":
		vs := versions(v.atts, v.d.Filename)
		i := slices.IndexFunc(vs, func(d Descriptor) bool { return d.ID == v.d.ID })
		if k.String() == "[" {
			i--
		} else {
			i++
		}
		if i < 0 || i >= len(vs) {
			if len(vs) > 0 {
				v.s.hint = fmt.Sprintf("%s has versions %d to %d", termtext.Line(v.d.Filename), vs[0].Version, vs[len(vs)-1].Version)
			}
			return nil
		}
		return v.open(vs[i])
	case "c":
		v.s.post(commentOnMsg{v.d})
	}
	return nil
}

func (v *viewer) Focus() {}

// Blur closes the viewer.
func (v *viewer) Blur() {
	v.shown, v.data, v.img, v.lines = false, nil, nil, nil
}

// open shows version d, reading it from the store; another file starts at
// its top.
func (v *viewer) open(d Descriptor) tea.Cmd {
	if !v.shown || v.d.Filename != d.Filename {
		v.top = 0
	}
	v.shown, v.d, v.loading, v.data, v.img, v.err, v.lines = true, d, true, nil, nil, "", nil
	return v.read(d)
}

// read reads version d from the store.
func (v *viewer) read(d Descriptor) tea.Cmd {
	s := v.s.sess
	return func() tea.Msg {
		fresh, data, err := readAttachment(s, d.ID)
		if err != nil {
			return openedMsg{d: d, err: err}
		}
		return openedMsg{fresh, data, nil, decodeWhole(fresh, data)}
	}
}

func (v *viewer) opened(msg openedMsg) {
	if !v.shown || v.d.ID != msg.d.ID {
		return // closed, or another version asked for since
	}
	v.d, v.data, v.img, v.loading, v.lines, v.err = msg.d, msg.data, msg.img, false, nil, ""
	if msg.err != nil {
		v.err = msg.err.Error()
	}
}

// follow takes the store's list and brings an open viewer up to it: a
// viewer that showed its file's newest version moves to a newer one a
// block attached since, unless hold (a comment on the shown one is being
// written); else its version is read again (for comments added since),
// or, when the list no longer holds it, the viewer says so.
func (v *viewer) follow(msg attachmentsMsg, hold bool) tea.Cmd {
	if msg.err != nil {
		return nil
	}
	newest := false // the viewer showed its file's newest version
	if v.shown {
		vs := versions(v.atts, v.d.Filename)
		newest = len(vs) == 0 || vs[len(vs)-1].ID == v.d.ID
	}
	v.atts, v.lines = msg.list, nil // its title names the versions there are
	if !v.shown {
		return nil
	}
	vs := versions(v.atts, v.d.Filename)
	i := slices.IndexFunc(vs, func(d Descriptor) bool { return d.ID == v.d.ID })
	switch {
	case i < 0:
		v.data, v.img, v.loading = nil, nil, false
		v.err = "it is no longer among the session's attachments"
		return nil
	case newest && i < len(vs)-1 && !hold:
		latest, was := vs[len(vs)-1], v.d.Version
		v.s.post(chooseMsg{latest.ID})
		v.s.hint = fmt.Sprintf("%s v%d is new: it replaced v%d here ([ shows v%d)", termtext.Line(latest.Filename), latest.Version, was, was)
		return v.open(latest)
	}
	return v.read(v.d)
}

func (v *viewer) SetSize(width, height int) {
	if width != v.linesW {
		v.lines = nil
	}
	v.width, v.height = width, height
}

// render is the viewer's lines at width, cached.
func (v *viewer) render(th *theme, width int) []string {
	if v.lines != nil && v.linesW == width {
		return v.lines
	}
	d, vs := v.d, versions(v.atts, v.d.Filename)
	var raw []string
	prose := func(s string) { raw = append(raw, strings.Split(ansi.Wrap(s, width, ""), "\n")...) }
	title := fmt.Sprintf("%s  v%d", termtext.Line(d.Filename), d.Version)
	if n := len(vs); n > 1 {
		title += fmt.Sprintf(" (versions %d–%d: [ and ] switch)", vs[0].Version, vs[n-1].Version)
	}
	prose(th.panelTitle.Render(title))
	facts := []string{}
	if d.Kind != "" {
		facts = append(facts, termtext.Line(d.Kind))
	}
	facts = append(facts, termtext.Line(d.MediaType), sizeText(d.Size))
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
			who := termtext.Line(c.Author)
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
	v.lines, v.linesW = raw, width
	return raw
}

// View is height lines of the viewer from v.top (clamped), the last one
// its keys.
func (v *viewer) View() []string {
	th, width, height := v.s.th, v.width, v.height
	lines := v.render(th, width)
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
		lines := []string{fmt.Sprintf("binary data (%s), %s; its first %d bytes:", termtext.Line(d.MediaType), sizeText(d.Size), len(head))}
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
		out = append(out, th.fold.Render(fmt.Sprintf("… %s more lines (vis-agent sandbox attachment get %s writes it all)", thousands(more), termtext.Line(d.Filename))))
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
