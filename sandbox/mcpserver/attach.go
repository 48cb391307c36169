package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vis-agent/vis-agent/sandbox/client"
)

// uriScheme names the session's attachments as MCP resources:
//
//	vis-attachment://SESSION/FILENAME            the latest version
//	vis-attachment://SESSION/FILENAME?version=N  version N (-1 the latest, -2 the one before)
//	vis-attachment://SESSION/ID                  the version with that id
//
// FILENAME is percent-encoded as a URL path segment. The list shows one
// resource per filename (its latest version); any version is readable.
const uriScheme = "vis-attachment"

// maxImage is the largest image read_attachment returns as an image (MCP
// clients refuse larger ones); a larger one is described instead.
const maxImage = 5 << 20

// outputFilename is the attachment that keeps a python call's whole
// output when the result carries only part of it; each such call adds a
// version.
const outputFilename = "python-output.txt"

// attachmentURI names version (0: the latest) of session's filename as a
// resource.
func attachmentURI(session, filename string, version int) string {
	u := uriScheme + "://" + session + "/" + url.PathEscape(filename)
	if version != 0 {
		u += "?version=" + strconv.Itoa(version)
	}
	return u
}

// parseURI is the session (one of the server's), the id or filename and
// the version a resource URI names.
func (sv *server) parseURI(uri string) (*client.Session, string, int, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != uriScheme || len(u.Path) < 2 || strings.Contains(u.Path[1:], "/") {
		return nil, "", 0, mcp.ResourceNotFoundError(uri)
	}
	s := sv.sessions.named(u.Host)
	if s == nil {
		return nil, "", 0, mcp.ResourceNotFoundError(uri)
	}
	version := 0
	if v := u.Query().Get("version"); v != "" {
		if version, err = strconv.Atoi(v); err != nil {
			return nil, "", 0, fmt.Errorf("%s: version %q is not a number", uri, v)
		}
	}
	return s, u.Path[1:], version, nil
}

// addAttachments registers the attachments as resources (tools registers
// the tools that list and read them).
func (sv *server) addAttachments(srv *mcp.Server) {
	sv.srv = srv
	sv.addSessionResources(sv.home)
	sv.syncResources(context.Background())
}

// addSessionResources registers s's resource template (any version of
// its attachments) and its log.
func (sv *server) addSessionResources(s *client.Session) {
	sv.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: uriScheme + "://" + s.Meta.Name + "/{name}{?version}", Name: "attachment",
		Title: "An attachment of session " + s.Meta.Name, Description: "Any version of an attachment, by filename (?version=N) or by id."}, sv.readResource)
	sv.addLog(s)
}

// listed is what the resource list shows, to tell what changed.
type listed struct {
	mu      sync.Mutex
	session string            // whose attachments they are
	latest  map[string]string // filename -> id of its latest version
	stamp   string            // the store's stamp when it was listed
}

// syncResources makes the listed resources the store's of the session the
// server acts on: one per filename, added, replaced or removed (the SDK
// then sends the client notifications/resources/list_changed), and tells
// the subscribers of a filename whose latest version changed
// (notifications/resources/updated). After a switch to another session,
// the list is that session's.
func (sv *server) syncResources(ctx context.Context) {
	sv.listed.mu.Lock()
	defer sv.listed.mu.Unlock()
	s := sv.cur()
	if s.Meta.Name != sv.listed.session {
		var old []string
		for f := range sv.listed.latest {
			old = append(old, attachmentURI(sv.listed.session, f, 0))
		}
		if len(old) > 0 {
			sv.srv.RemoveResources(old...)
		}
		sv.listed.session, sv.listed.latest, sv.listed.stamp = s.Meta.Name, nil, ""
	}
	stamp := s.AttachmentsStamp(true)
	if stamp == sv.listed.stamp {
		return
	}
	all, err := s.Attachments()
	if err != nil {
		return // the next sync tries again; the tools report the error
	}
	sv.listed.stamp = stamp
	now := map[string]string{}
	for _, d := range all { // newest first: the first of a filename is its latest
		if _, seen := now[d.Filename]; seen {
			continue
		}
		now[d.Filename] = d.ID
		if sv.listed.latest[d.Filename] == d.ID {
			continue
		}
		desc := describeAttachment(d)
		if d.Version > 1 {
			desc += fmt.Sprintf(". Earlier versions: ?version=1..%d", d.Version-1)
		}
		sv.srv.AddResource(&mcp.Resource{URI: attachmentURI(s.Meta.Name, d.Filename, 0), Name: d.Filename, MIMEType: d.MediaType, Size: d.Size,
			Title: fmt.Sprintf("%s (version %d)", d.Filename, d.Version), Description: desc}, sv.readResource)
		if _, had := sv.listed.latest[d.Filename]; had {
			sv.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: attachmentURI(s.Meta.Name, d.Filename, 0)})
		}
	}
	var gone []string
	for f := range sv.listed.latest {
		if _, ok := now[f]; !ok {
			gone = append(gone, attachmentURI(s.Meta.Name, f, 0))
		}
	}
	if len(gone) > 0 {
		sv.srv.RemoveResources(gone...)
	}
	sv.listed.latest = now
}

// describeAttachment is one line about a version: what, how big, from where.
func describeAttachment(d client.Descriptor) string {
	s := fmt.Sprintf("%s version %d: %s, %s, %s", d.Filename, d.Version, d.Kind, d.MediaType, sizeText(d.Size))
	if d.Block > 0 {
		s += fmt.Sprintf(", attached by block %d", d.Block)
	}
	s += ", " + d.Created.Format("2006-01-02 15:04:05 UTC")
	if d.Commentable {
		s += ", commentable"
	}
	return s + ", id " + d.ID
}

func sizeText(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// AttachmentList is list_attachments' structured result.
type AttachmentList struct {
	Attachments []AttachmentEntry `json:"attachments"`
}

// AttachmentEntry is a descriptor with its resource URI.
type AttachmentEntry struct {
	client.Descriptor
	URI string `json:"uri"`
}

// listAttachments answers list_attachments; its structured result (an
// AttachmentList) has no output schema, which would cost every client's
// context more than the listing.
func (sv *server) listAttachments(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	s := sv.cur()
	all, err := s.Attachments()
	if err != nil {
		return nil, nil, err
	}
	sv.syncResources(ctx)
	list := AttachmentList{Attachments: []AttachmentEntry{}}
	var b strings.Builder
	if len(all) == 0 {
		b.WriteString("No attachments yet: a block stores one with attach(data, filename=...).\n")
	}
	for _, d := range all {
		u := attachmentURI(s.Meta.Name, d.ID, 0)
		list.Attachments = append(list.Attachments, AttachmentEntry{Descriptor: d, URI: u})
		fmt.Fprintf(&b, "%s (resource %s)\n", describeAttachment(d), u)
	}
	res := textResult(b.String())
	res.StructuredContent = list
	return res, nil, nil
}

// ReadArgs are read_attachment's arguments.
type ReadArgs struct {
	IDOrFilename string `json:"id_or_filename" jsonschema:"an id, or a filename (its latest version by default)"`
	Version      int    `json:"version,omitempty" jsonschema:"with a filename: N; -1 the latest, -2 the one before"`
	Offset       int    `json:"offset,omitempty" jsonschema:"text: characters to skip"`
	Limit        int    `json:"limit,omitempty" jsonschema:"text: characters to return"`
	OffsetLines  int    `json:"offset_lines,omitempty" jsonschema:"text: lines to skip (instead of offset)"`
	LimitLines   int    `json:"limit_lines,omitempty" jsonschema:"text: lines to return"`
}

func (sv *server) readAttachment(ctx context.Context, req *mcp.CallToolRequest, in ReadArgs) (*mcp.CallToolResult, any, error) {
	if in.IDOrFilename == "" {
		return nil, nil, errors.New(`read_attachment needs "id_or_filename" (list_attachments shows them)`)
	}
	switch {
	case in.Offset < 0 || in.Limit < 0 || in.OffsetLines < 0 || in.LimitLines < 0:
		return nil, nil, errors.New("offset, limit, offset_lines and limit_lines must not be negative")
	case (in.Offset > 0 || in.Limit > 0) && (in.OffsetLines > 0 || in.LimitLines > 0):
		return nil, nil, errors.New("page by characters (offset, limit) or by lines (offset_lines, limit_lines), not both")
	}
	s := sv.cur()
	d, err := s.Attachment(in.IDOrFilename, in.Version)
	if err != nil {
		return nil, nil, err
	}
	data, err := readAll(s, d)
	if err != nil {
		return nil, nil, err
	}
	head := describeAttachment(d)
	switch {
	case isImage(d.MediaType) && len(data) <= maxImage:
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: head}, &mcp.ImageContent{Data: data, MIMEType: d.MediaType}}}, nil, nil
	case isImage(d.MediaType):
		return notShown(s, head, "An image larger than 5 MiB", d), nil, nil
	case !isText(d.MediaType, data):
		return notShown(s, head, "Not text", d), nil, nil
	}
	limit := in.Limit
	if limit == 0 || limit > sv.maxOutput {
		limit = sv.maxOutput
	}
	if in.OffsetLines > 0 || in.LimitLines > 0 {
		return textResult(head + "\n" + lineSlice(string(data), in.OffsetLines, in.LimitLines, sv.maxOutput)), nil, nil
	}
	text, total := charSlice(string(data), in.Offset, limit)
	var b strings.Builder
	b.WriteString(head + "\n")
	end := min(in.Offset+limit, total)
	if in.Offset > 0 || end < total {
		fmt.Fprintf(&b, "[characters %d to %d of %d", min(in.Offset, total), end, total)
		if end < total {
			fmt.Fprintf(&b, "; read on with offset %d", end)
		}
		b.WriteString("]\n")
	}
	b.WriteString(text)
	return textResult(b.String()), nil, nil
}

// notShown describes an attachment read_attachment does not return, and
// how to read it.
func notShown(s *client.Session, head, why string, d client.Descriptor) *mcp.CallToolResult {
	return textResult(head + "\n" + why + ", so not shown here. Read its bytes in a python block with read_attachment(" +
		strconv.Quote(d.ID) + "), or as the resource " + attachmentURI(s.Meta.Name, d.ID, 0) + ".\n")
}

// readAll is an attachment's bytes (at most the store's limit per
// attachment, so bounded).
func readAll(s *client.Session, d client.Descriptor) ([]byte, error) {
	r, err := s.ReadAttachment(d)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read attachment %s: %w", d.Filename, err)
	}
	return data, nil
}

// lineSlice is lines offset+1.. of s, at most limit of them (0: as many
// as fit) and within max characters, after a line saying which lines
// they are and where to read on.
func lineSlice(s string, offset, limit, max int) string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	total := len(lines)
	start := min(offset, total)
	var b strings.Builder
	end, chars := start, 0
	for end < total && (limit == 0 || end-start < limit) {
		n := utf8.RuneCountInString(lines[end])
		if chars+n > max && end > start {
			break
		}
		if chars+n > max { // one line longer than the cap: its start
			cut, _ := charSlice(lines[end], 0, max)
			b.WriteString(cut + "\n")
			end++
			break
		}
		b.WriteString(lines[end])
		chars += n
		end++
	}
	note := fmt.Sprintf("[lines %d to %d of %d", min(start+1, total), end, total)
	if end < total {
		note += fmt.Sprintf("; read on with offset_lines %d", end)
	}
	return note + "]\n" + b.String()
}

// charSlice is limit characters of s from character offset, and how many
// characters s has.
func charSlice(s string, offset, limit int) (string, int) {
	total := utf8.RuneCountInString(s)
	start, end, i := len(s), len(s), 0
	for pos := range s {
		if i == offset {
			start = pos
		}
		if i == offset+limit {
			end = pos
			break
		}
		i++
	}
	if start > end {
		start = end
	}
	return s[start:end], total
}

func isImage(mediaType string) bool {
	switch strings.TrimSpace(strings.SplitN(mediaType, ";", 2)[0]) {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// isText says whether an attachment reads as text: a textual media type,
// or valid UTF-8 without NUL bytes.
func isText(mediaType string, data []byte) bool {
	mt := strings.TrimSpace(strings.SplitN(mediaType, ";", 2)[0])
	if strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "json") || strings.HasSuffix(mt, "xml") || mt == "application/javascript" {
		return utf8.Valid(data)
	}
	return utf8.Valid(data) && !bytes.ContainsRune(data, 0)
}

// readResource reads an attachment resource: text as text, anything else
// as a blob.
func (sv *server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	s, name, version, err := sv.parseURI(req.Params.URI)
	if err != nil {
		return nil, err
	}
	d, err := s.Attachment(name, version)
	var nf *client.AttachmentNotFoundError
	if errors.As(err, &nf) {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	if err != nil {
		return nil, err
	}
	data, err := readAll(s, d)
	if err != nil {
		return nil, err
	}
	c := &mcp.ResourceContents{URI: req.Params.URI, MIMEType: d.MediaType}
	if isText(d.MediaType, data) {
		c.Text = string(data)
	} else {
		c.Blob = data
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

// keepOutput stores the whole output of a call whose result shows only
// part of it as an attachment of s, and says where it is, for the note.
func (sv *server) keepOutput(s *client.Session, out *capture) string {
	if out.spill == nil {
		return notKept
	}
	r, err := out.spill.reader()
	if err == nil {
		var d client.Descriptor
		d, err = s.Attach(client.NewAttachment{Filename: outputFilename, Kind: "output", MediaType: "text/plain; charset=utf-8"}, r, client.AttachLimits{MaxBytes: sv.maxAttach})
		if err == nil {
			sv.syncResources(context.Background())
			s := fmt.Sprintf("whole output: attachment %s version %d, id %s (read_attachment pages it by lines: offset_lines, limit_lines)",
				outputFilename, d.Version, d.ID)
			if out.spill.dropped > 0 {
				s += fmt.Sprintf("; it holds the first %s, the last %s were past the attachment size limit", sizeText(out.spill.written), sizeText(out.spill.dropped))
			}
			return s
		}
	}
	return "the missing part could not be kept as an attachment (" + err.Error() + "): print less (a slice, a count, a summary)"
}
