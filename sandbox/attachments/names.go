package attachments

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// NotFoundError is an id or filename the session has no attachment under,
// or a version its filename does not have.
type NotFoundError struct {
	What    string   // the id or filename asked for
	Nearest []string // the session's filenames closest to What
	// Newest are the session's newest filenames, when none is close to
	// What (an id mistyped, a name unlike any): what there is to ask for.
	Newest   []string
	Version  int   // the version asked for, when What exists
	Versions []int // What's versions, when What exists
}

func (e *NotFoundError) Error() string {
	if len(e.Versions) > 0 {
		vs := make([]string, len(e.Versions))
		for i, v := range e.Versions {
			vs[i] = strconv.Itoa(v)
		}
		return fmt.Sprintf("no version %d of attachment %q in this session; it has versions %s", e.Version, e.What, strings.Join(vs, ", "))
	}
	msg := fmt.Sprintf("no attachment %q in this session", e.What)
	if len(e.Nearest) > 0 {
		msg += "; nearest: " + strings.Join(e.Nearest, ", ")
	} else if len(e.Newest) > 0 {
		msg += "; its newest: " + strings.Join(e.Newest, ", ")
	}
	return msg
}

// maxNearest is how many names a NotFoundError suggests.
const maxNearest = 3

// nearestNames are the names closest to want: those within an edit
// distance of a third of the longer name, or sharing a case-insensitive
// substring with it, closest first.
func nearestNames(want string, names []string) []string {
	type scored struct {
		name string
		d    int
	}
	lw := strings.ToLower(want)
	var close []scored
	for _, n := range names {
		ln := strings.ToLower(n)
		d := editDistance(lw, ln)
		if d <= max(len(lw), len(ln))/3 || (len(lw) >= 3 && strings.Contains(ln, lw)) || (len(ln) >= 3 && strings.Contains(lw, ln)) {
			close = append(close, scored{n, d})
		}
	}
	sort.Slice(close, func(i, j int) bool {
		if close[i].d != close[j].d {
			return close[i].d < close[j].d
		}
		return close[i].name < close[j].name
	})
	var out []string
	for i := 0; i < len(close) && i < maxNearest; i++ {
		out = append(out, close[i].name)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// maxFilename is the longest filename, in bytes, as most file systems.
const maxFilename = 255

// CheckFilename refuses a name that could not be written out as a file of
// the working folder: a path, ".", "..", control characters, invalid
// UTF-8, or longer than 255 bytes.
func CheckFilename(name string) error {
	bad := func(why string) error { return fmt.Errorf("invalid attachment filename %q: %s", name, why) }
	switch {
	case name == "":
		return errors.New("invalid attachment filename: it is empty")
	case name == "." || name == "..":
		return bad("give a file's name")
	case len(name) > maxFilename:
		return bad(fmt.Sprintf("longer than %d bytes", maxFilename))
	case !utf8.ValidString(name):
		return bad("not valid UTF-8")
	case strings.ContainsAny(name, `/\`):
		return bad("a file's name, not a path")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return bad("it holds a control character")
		}
	}
	return nil
}

// CheckWritable refuses a filename a block chose that `attachment get`
// must not write in the user's folder by itself: a hidden file (.envrc,
// .bashrc: read by tools without being seen), one holding a control or a
// bidirectional formatting character (U+202E shows "exe.txt" for
// "txt.exe"), or a path. The user can still name the file (-o).
func CheckWritable(name string) error {
	if err := CheckFilename(name); err != nil {
		return err
	}
	if strings.HasPrefix(name, ".") {
		return fmt.Errorf("the attachment's filename %q is hidden (it starts with a dot)", name)
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("the attachment's filename %q holds the control or formatting character U+%04X (it can make a name show as another)", name, r)
		}
	}
	return nil
}

// extensionTypes are the media types of common extensions whose bytes
// sniffing calls plain text or unknown; read before the system's table,
// so every machine names them alike. The first extension of a type is the
// one default filenames get. (An array, not a map: nothing to build when
// vis-agent starts.)
var extensionTypes = [...]struct{ ext, mediaType string }{
	{".md", "text/markdown"}, {".markdown", "text/markdown"}, {".txt", "text/plain"}, {".log", "text/plain"},
	{".csv", "text/csv"}, {".tsv", "text/tab-separated-values"}, {".json", "application/json"},
	{".jsonl", "application/jsonl"}, {".yaml", "application/yaml"}, {".yml", "application/yaml"},
	{".toml", "application/toml"}, {".py", "text/x-python"}, {".go", "text/x-go"}, {".diff", "text/x-diff"},
	{".patch", "text/x-diff"}, {".html", "text/html"}, {".htm", "text/html"}, {".css", "text/css"},
	{".js", "text/javascript"}, {".svg", "image/svg+xml"}, {".xml", "application/xml"},
	{".ipynb", "application/x-ipynb+json"}, {".jpg", "image/jpeg"}, {".bin", "application/octet-stream"},
}

// sniff is the media type of bytes starting with head and named filename:
// what their magic bytes say, else what the name's extension says, else
// text/plain or application/octet-stream.
func sniff(head []byte, filename string) string {
	byBytes, _, _ := mime.ParseMediaType(http.DetectContentType(head))
	if byBytes != "text/plain" && byBytes != "application/octet-stream" && byBytes != "" {
		return byBytes
	}
	if ext := strings.ToLower(filepath.Ext(filename)); ext != "" {
		for _, e := range extensionTypes {
			if e.ext == ext {
				return e.mediaType
			}
		}
		if t, _, err := mime.ParseMediaType(mime.TypeByExtension(ext)); err == nil && t != "" {
			return t
		}
	}
	if byBytes == "" {
		return "application/octet-stream"
	}
	return byBytes
}

// kindOf is the kind of an attachment of media type t given none.
func kindOf(t string) string {
	top, sub, _ := strings.Cut(t, "/")
	switch {
	case top == "image" || top == "audio" || top == "video" || top == "text":
		return top
	case sub == "json" || strings.HasSuffix(sub, "+json") || sub == "yaml" || sub == "toml" || sub == "xml":
		return "text"
	}
	return "file"
}

// defaultFilename names an attachment given no filename: its kind, part
// of its id and the usual extension of its media type.
func defaultFilename(kind, mediaType, id string) string {
	ext := ""
	for _, e := range extensionTypes {
		if e.mediaType == mediaType {
			ext = e.ext
			break
		}
	}
	if ext == "" {
		if exts, err := mime.ExtensionsByType(mediaType); err == nil && len(exts) > 0 {
			ext = exts[0]
		}
	}
	if ext == "" && strings.HasPrefix(mediaType, "text/") {
		ext = ".txt"
	}
	if ext == "" {
		ext = ".bin"
	}
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, kind)
	if name == "" {
		name = "attachment"
	}
	return name + "-" + strings.TrimPrefix(id, "att_") + ext
}
