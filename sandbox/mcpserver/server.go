// Package mcpserver serves one sandbox session to coding agents over the
// Model Context Protocol: tools that run Python blocks in the session, list
// what it defined, restart it and interrupt it. It is a thin front end of
// package client; the blocks run in the session's own process, never in
// the server, so nothing they print can reach the server's transport.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// DefaultMaxOutput is how many characters of a block's output one result
// carries by default (Claude Code warns past about 10,000 tokens).
const DefaultMaxOutput = 30000

// progressEvery is how often a running block reports progress.
const progressEvery = time.Second

// Config is what the server serves.
type Config struct {
	Session   *client.Session
	Name      string // the implementation name sent to clients
	Version   string
	MaxOutput int // characters per result; 0: DefaultMaxOutput
	// Policy is the jail every block runs under (a child started under
	// another one is replaced first, with the restart notice).
	Policy protocol.Policy
	// MaxAttachment bounds the attachment that keeps a cut output, in
	// bytes (0: the store's default).
	MaxAttachment int64
	// Echo shows the repr of a block's trailing expression after its
	// output.
	Echo bool
	// Fork makes session name, in src's workspace, from src's state
	// after block at (0: its last), and opens it (`sandbox fork`); nil
	// where there is none (a session of another machine): fork_session
	// refuses.
	Fork func(src *client.Session, name string, at int) (*client.Session, error)
}

type server struct {
	// home is the session the server was started for; sessions are the
	// ones it may act on (home and the forks it made), and which it acts
	// on now (fork.go).
	home        *client.Session
	sessions    sessions
	forkSession func(src *client.Session, name string, at int) (*client.Session, error)
	maxOutput   int
	policy      protocol.Policy
	maxAttach   int64
	echo        bool
	srv         *mcp.Server
	listed      listed
	order       *order
	named       sync.Once
}

// watchEvery is how often the server looks at the attachments store (a
// stat or two) for what other clients' blocks attached, so that its
// resources and their notifications follow without a call of its client.
const watchEvery = time.Second

// Run serves cfg's session over t until the client leaves or ctx ends.
func Run(ctx context.Context, cfg Config, t mcp.Transport) error {
	sv := newServer(cfg)
	watching, stop := context.WithCancel(ctx)
	defer stop()
	go sv.watch(watching)
	// The client leaving (standard input closed, or a signal) ends its
	// calls: the running block is interrupted, the queued ones withdrawn.
	var leave func()
	sv.order.gone, leave = context.WithCancel(ctx)
	defer leave()
	if st, ok := t.(stdio); ok {
		st.gone = leave
		t = st
	}
	return sv.srv.Run(ctx, orderedTransport{Transport: t, o: sv.order})
}

// watch brings the resources up to the store every watchEvery until ctx
// ends.
func (sv *server) watch(ctx context.Context) {
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			sv.syncResources(ctx)
		}
	}
}

// newServer is an MCP server for cfg's session, its tools registered.
func newServer(cfg Config) *server {
	sv := &server{home: cfg.Session, forkSession: cfg.Fork, maxOutput: cfg.MaxOutput, policy: cfg.Policy, maxAttach: cfg.MaxAttachment, order: newOrder(), echo: cfg.Echo}
	// The blocks of this server are one client's: its interrupt reaches
	// them alone; the client's name is known once it initialized.
	sv.home.Client = client.NewClient("mcp", "")
	sv.sessions = sessions{cur: sv.home, own: map[string]*client.Session{sv.home.Meta.Name: sv.home}}
	sv.order.named = sv.nameClient
	if sv.maxAttach <= 0 {
		sv.maxAttach = client.DefaultMaxAttachBytes
	}
	if sv.maxOutput <= 0 {
		sv.maxOutput = DefaultMaxOutput
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: cfg.Name, Version: cfg.Version},
		&mcp.ServerOptions{Instructions: sv.instructions(),
			Capabilities:       &mcp.ServerCapabilities{Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true}},
			SubscribeHandler:   sv.subscribe,
			UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil }})
	// The list and a read see what blocks of any client attached since;
	// the calls that change the session run in the order they came.
	srv.AddReceivingMiddleware(sv.order.middleware, argumentSentences, func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "resources/list" || method == "resources/read" {
				sv.syncResources(ctx)
			}
			return next(ctx, method, req)
		}
	})
	for _, t := range tools {
		t.add(sv, srv, &mcp.Tool{Name: t.Name, Title: t.Title})
	}
	sv.addAttachments(srv)
	return sv
}

// yes and no, for the annotations that take a pointer.
var yes, no = true, false

// Tool is one tool the server offers: its name and title, which
// `vis-agent sandbox mcp --help` lists (Tools), and how it is registered.
type Tool struct {
	Name, Title string
	add         func(sv *server, srv *mcp.Server, t *mcp.Tool)
}

// readOnly marks the tools that change nothing.
var readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true}

// tools are the server's tools, in the order the help lists them.
var tools = []Tool{
	// python is on the hot path: registered with its schemas but decoded
	// here, without the SDK's generic validation of every call's input and
	// output (a tenth of a warm block's round trip).
	// (No output schema: the structured result is metadata a program
	// reads, and its schema would cost every client 1.5k characters of
	// context; see TestToolsListSize.)
	{"python", "Run Python in the persistent session", func(sv *server, srv *mcp.Server, t *mcp.Tool) {
		t.Description, t.InputSchema = sv.pythonDescription(), mustSchema[PythonArgs]()
		srv.AddTool(t, sv.pythonCall)
	}},
	{"defs", "List the session's helpers and variables", func(sv *server, srv *mcp.Server, t *mcp.Tool) {
		t.Description, t.Annotations = defsDescription, readOnly
		mcp.AddTool(srv, t, sv.defs)
	}},
	{"restart_session", "Restart the session's Python process", func(sv *server, srv *mcp.Server, t *mcp.Tool) {
		t.Description, t.Annotations = restartDescription, &mcp.ToolAnnotations{DestructiveHint: &yes}
		mcp.AddTool(srv, t, sv.restart)
	}},
	{"rewind_session", "Rewind the session's state to an earlier block", func(sv *server, srv *mcp.Server, t *mcp.Tool) {
		// destructive to the state it replaces; the same call twice ends
		// in the same state
		t.Description, t.Annotations = rewindDescription, &mcp.ToolAnnotations{DestructiveHint: &yes, IdempotentHint: true}
		mcp.AddTool(srv, t, sv.rewind)
	}},
	{"fork_session", "Fork the session to try something in the copy", func(sv *server, srv *mcp.Server, t *mcp.Tool) {
		// a new session each time; the current one is left as it is
		t.Description, t.Annotations = forkDescription, &mcp.ToolAnnotations{DestructiveHint: &no}
		mcp.AddTool(srv, t, sv.fork)
	}},
	{"switch_session", "Switch between the session and its forks", func(sv *server, srv *mcp.Server, t *mcp.Tool) {
		t.Description, t.Annotations = switchDescription, &mcp.ToolAnnotations{DestructiveHint: &no, IdempotentHint: true}
		mcp.AddTool(srv, t, sv.switchSession)
	}},
	{"interrupt", "Interrupt your running block", func(sv *server, srv *mcp.Server, t *mcp.Tool) {
		t.Description = interruptDescription
		mcp.AddTool(srv, t, sv.interrupt)
	}},
	{"install", "Install Python packages into the session", func(sv *server, srv *mcp.Server, t *mcp.Tool) {
		t.Description = installDescription
		mcp.AddTool(srv, t, sv.install)
	}},
	{"list_attachments", "List the session's attachments", func(sv *server, srv *mcp.Server, t *mcp.Tool) {
		t.Description, t.Annotations = sv.listDescription(), readOnly
		mcp.AddTool(srv, t, sv.listAttachments)
	}},
	{"read_attachment", "Read one of the session's attachments", func(sv *server, srv *mcp.Server, t *mcp.Tool) {
		t.Description, t.Annotations = sv.readDescription(), readOnly
		mcp.AddTool(srv, t, sv.readAttachment)
	}},
}

// Tools are the tools the server offers, for the help.
func Tools() []Tool { return tools }

// PythonArgs are the python tool's arguments, as its schema shows them
// (pythonCall decodes them, telling a missing code from an empty one).
type PythonArgs struct {
	Code     string  `json:"code" jsonschema:"the Python block to run"`
	TimeoutS float64 `json:"timeout_s,omitempty" jsonschema:"seconds before KeyboardInterrupt (default 300)"`
	// StructuredOutput "full" adds the output to the structured result.
	StructuredOutput string `json:"structured_output,omitempty" jsonschema:"full: the structured result also holds stdout"`
}

// PythonResult is the python tool's structured result: the fields of
// `vis-agent sandbox run --json` but the output (the text carries it, and
// clients that forward both would pay for it twice) unless the call asks
// for it with structured_output "full", and how much was printed.
type PythonResult struct {
	client.Report
	// Stdout shadows Report's: absent unless asked for.
	Stdout string `json:"stdout,omitempty"`
	// OutputChars is how many characters the block printed (as a
	// terminal shows them); the text holds them all unless
	// OutputTruncated.
	OutputChars     int  `json:"output_chars"`
	OutputTruncated bool `json:"output_truncated"`
}

// mustSchema is the JSON schema of T's fields (T is one of this package's
// argument and result types, so an error is a programming error).
func mustSchema[T any]() *jsonschema.Schema {
	sc, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err)
	}
	return sc
}

// pythonCall decodes the python tool's arguments strictly (unknown fields,
// wrong types and a missing code are errors the model reads).
func (sv *server) pythonCall(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Code             *string `json:"code"`
		TimeoutS         float64 `json:"timeout_s"`
		StructuredOutput string  `json:"structured_output"`
	}
	dec := json.NewDecoder(bytes.NewReader(req.Params.Arguments))
	dec.DisallowUnknownFields()
	err := dec.Decode(&args)
	switch {
	case len(req.Params.Arguments) == 0 || err == nil && args.Code == nil:
		err = errors.New(`the python tool needs "code", the block to run`)
	case err != nil:
		err = argumentError(err)
	case args.TimeoutS < 0:
		err = errors.New("timeout_s must be a positive number of seconds")
	case args.StructuredOutput != "" && args.StructuredOutput != "full":
		err = fmt.Errorf(`structured_output is "full" or absent, not %q`, args.StructuredOutput)
	}
	if err != nil {
		return errorResult(err), nil
	}
	return sv.python(ctx, req, *args.Code, args.TimeoutS, args.StructuredOutput == "full"), nil
}

// argumentError says in one sentence what is wrong with a tool's
// arguments, rather than Go's decoding message.
func argumentError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		want := map[string]string{"string": "a string", "float64": "a number", "bool": "true or false"}[typeErr.Type.String()]
		if want == "" {
			want = "a " + typeErr.Type.String()
		}
		return fmt.Errorf("%s must be %s, not a JSON %s", typeErr.Field, want, typeErr.Value)
	case errors.As(err, &syntaxErr):
		return errors.New("the arguments are not a JSON object")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Errorf("unknown argument %s: the python tool takes code, timeout_s and structured_output", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return fmt.Errorf("invalid arguments: %w", err)
}

// nameClient names the server's client after the MCP client, once, at
// its first call (every call passes here before it reads the name).
func (sv *server) nameClient(ss *mcp.ServerSession) {
	sv.named.Do(func() {
		if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
			sv.home.Client.Name = clientName(p.ClientInfo.Name)
		}
	})
}

// subscribe accepts a subscription to an attachment's resource.
func (sv *server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	_, _, _, err := sv.parseURI(req.Params.URI)
	return err
}

func errorResult(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}, IsError: true}
}

// clientName is the MCP client's name as it introduced itself
// ("claude-code"), without control characters and cut to a label's
// length: it labels the client's blocks in the journal and the live view.
func clientName(name string) string {
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return -1
		}
		return r
	}, name)
	if r := []rune(name); len(r) > 40 {
		name = string(r[:40])
	}
	return name
}

// python runs code: the text result for the model, the structured one for
// programs.
func (sv *server) python(ctx context.Context, req *mcp.CallToolRequest, code string, timeoutS float64, full bool) *mcp.CallToolResult {
	timeout := protocol.MaxTimeout
	if timeoutS < protocol.MaxTimeout.Seconds() {
		timeout = protocol.ClampTimeout(time.Duration(timeoutS * float64(time.Second)))
	}
	var (
		mu    sync.Mutex
		notes []string
		out   = newCapture(sv.maxOutput)
		scr   screen // what a terminal would show: \r and colours resolved
	)
	out.spillMax = sv.maxAttach
	defer func() { out.spill.close() }()
	// A cancelled call (or a client gone) withdraws the block if it still
	// waits behind another client's, or interrupts it (never another
	// block); its result still arrives, and is dropped with the request.
	phase, since := "", time.Now() // "wait" while another client's block runs
	stopProgress := progress(ctx, req, func() string {
		mu.Lock()
		defer mu.Unlock()
		secs := time.Since(since).Seconds()
		if phase == "wait" {
			return fmt.Sprintf("waiting for another client's block (%.0f s)", secs)
		}
		return fmt.Sprintf("the block has run for %.0f s and printed %d characters", secs, out.total)
	})
	s := sv.cur()
	res, err := s.RunContext(ctx, code, client.RunOptions{Timeout: timeout, Policy: &sv.policy, Echo: sv.echo}, func(ev protocol.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Ev {
		case protocol.EvWait:
			phase, since = "wait", time.Now()
		case protocol.EvStarted:
			if phase == "wait" {
				phase, since = "", time.Now()
			}
		case protocol.EvNote:
			notes = append(notes, ev.Data)
		case protocol.EvOut:
			out.write(scr.write(ev.Data))
		}
	})
	stopProgress()
	out.write(scr.flush())
	if err != nil {
		return errorResult(fmt.Errorf("the session could not run the block: %w", err))
	}
	// What the block attached becomes a resource (a cancelled call's too).
	sv.syncResources(context.Background())
	printed := out.text(sv.keepOutput(s, out))
	content := []mcp.Content{&mcp.TextContent{Text: agentText(notes, printed, res, timeout)}}
	structured := PythonResult{Report: s.Report("", res), OutputChars: out.total, OutputTruncated: out.truncated()}
	if full {
		structured.Stdout = printed
	}
	return &mcp.CallToolResult{
		Content:           append(content, sv.images(s, res.Attachments)...),
		StructuredContent: structured,
		IsError:           res.Error != nil,
	}
}

// maxImages is how many of a block's images one result carries.
const maxImages = 8

// images are the images a block attached (its figures among them), as
// image content the model sees, each after a line naming it; those past
// maxImages or maxImage get that line only. (Every attachment is in the
// structured result.)
func (sv *server) images(s *client.Session, attached []protocol.Attached) []mcp.Content {
	var out []mcp.Content
	shown := 0
	for _, a := range attached {
		if !isImage(a.MediaType) {
			continue
		}
		line := fmt.Sprintf("[attached %s version %d: %s, %s, id %s]", a.Filename, a.Version, a.MediaType, sizeText(a.Size), a.ID)
		if a.Size > maxImage || shown == maxImages {
			out = append(out, &mcp.TextContent{Text: line + " (not shown: read_attachment reads it)"})
			continue
		}
		d, err := s.Attachment(a.ID, 0)
		var data []byte
		if err == nil {
			data, err = readAll(s, d)
		}
		if err != nil {
			out = append(out, &mcp.TextContent{Text: line + " (not shown: " + err.Error() + ")"})
			continue
		}
		shown++
		out = append(out, &mcp.TextContent{Text: line}, &mcp.ImageContent{Data: data, MIMEType: a.MediaType})
	}
	return out
}

// agentText is a block's result as the agent reads it: the notes (restart,
// repair), the output, then the error with its excerpt.
func agentText(notes []string, printed string, res protocol.Result, timeout time.Duration) string {
	var b strings.Builder
	for _, n := range notes {
		b.WriteString(strings.TrimRight(n, "\n") + "\n")
	}
	b.WriteString(printed)
	if res.Error != nil {
		if printed != "" && !strings.HasSuffix(printed, "\n") {
			b.WriteString("\n")
		}
		b.WriteString(res.Error.Traceback)
		if res.TimedOut {
			fmt.Fprintf(&b, "(The timeout was %g seconds; pass a larger timeout_s, up to %d, for a longer block.)\n", timeout.Seconds(), int(protocol.MaxTimeout.Seconds()))
		}
	} else if printed == "" {
		b.WriteString("(no output: the block ran and printed nothing)\n")
	}
	return b.String()
}

// arrivedKey is the context key of the time a tools/call reached the
// handlers (order's middleware sets it): its progress counts from then,
// so that it only grows from the wait for the client's earlier calls to
// the block's own run.
type arrivedKey struct{}

// progress reports progress every second while a call waits or its block
// runs, when the client asked for it (a progress token); the returned func
// stops it. Timers rather than a goroutine: a call that ends within the
// second costs no extra wake-up.
func progress(ctx context.Context, req *mcp.CallToolRequest, message func() string) (stop func()) {
	token := req.Params.GetProgressToken()
	if token == nil {
		return func() {}
	}
	var (
		mu      sync.Mutex
		stopped bool
		t       *time.Timer
	)
	started, ok := ctx.Value(arrivedKey{}).(time.Time)
	if !ok {
		started = time.Now()
	}
	var tick func()
	tick = func() {
		secs := time.Since(started).Seconds()
		req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: secs, Message: message()})
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			t = time.AfterFunc(progressEvery, tick)
		}
	}
	mu.Lock()
	t = time.AfterFunc(progressEvery, tick)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}

// DefsArgs are the defs tool's arguments.
type DefsArgs struct {
	Name    string `json:"name,omitempty" jsonschema:"one helper's source, or one variable's whole row"`
	Pattern string `json:"pattern,omitempty" jsonschema:"only names matching this Python regular expression"`
	Details bool   `json:"details,omitempty" jsonschema:"with name: what it depends on, its source's SHA-256"`
	Limit   int    `json:"limit,omitempty" jsonschema:"rows per page (default 20)"`
	Offset  int    `json:"offset,omitempty" jsonschema:"rows to skip, for the next page"`
}

func (sv *server) defs(ctx context.Context, req *mcp.CallToolRequest, in DefsArgs) (*mcp.CallToolResult, any, error) {
	if in.Limit < 0 || in.Offset < 0 {
		return nil, nil, errors.New("limit and offset must not be negative")
	}
	limit := in.Limit
	if limit == 0 {
		limit = 20
	}
	text, err := sv.cur().Defs(client.DefsOptions{Name: in.Name, Pattern: in.Pattern, Details: in.Details, Limit: limit, Offset: in.Offset})
	if err != nil {
		return nil, nil, err
	}
	return textResult(strings.TrimRight(text, "\n") + "\n"), nil, nil
}

// RestartArgs are restart_session's arguments.
type RestartArgs struct {
	Force bool     `json:"force,omitempty" jsonschema:"also while a block runs (that block is killed)"`
	Fresh bool     `json:"fresh,omitempty" jsonschema:"discard the snapshot: start empty"`
	Drop  []string `json:"drop,omitempty" jsonschema:"names to leave out of the restored state and the snapshot"`
}

func (sv *server) restart(ctx context.Context, req *mcp.CallToolRequest, in RestartArgs) (*mcp.CallToolResult, any, error) {
	if in.Fresh && len(in.Drop) > 0 {
		return nil, nil, errors.New("give fresh or drop, not both: fresh discards every name")
	}
	err := sv.cur().Restart(client.RestartOptions{Force: in.Force, Fresh: in.Fresh, Drop: in.Drop})
	switch {
	case errors.Is(err, client.ErrNotRunning):
		return textResult("The session's process was not running; the next python call starts it from the session's snapshot, " +
			"and its result begins with a [Sandbox restarted] notice.\n"), nil, nil
	case err != nil:
		return nil, nil, err
	case in.Fresh:
		return textResult("Restarted fresh: the snapshot was discarded and the session's new Python process starts empty. " +
			"The next result begins with a [Sandbox restarted] notice naming what was discarded.\n"), nil, nil
	case len(in.Drop) > 0:
		return textResult("Restarted without " + strings.Join(in.Drop, ", ") + ": the new Python process restored the rest of " +
			"the snapshot, which no longer holds them. The next result begins with a [Sandbox restarted] notice saying what came back.\n"), nil, nil
	}
	stopped := "saved and stopped"
	if in.Force {
		// A running block was killed, not saved: the snapshot is the
		// one after the last block that ended.
		stopped = "stopped (a running block was killed; the snapshot holds the state after the last block that ended)"
	}
	return textResult("Restarted: the session's Python process was " + stopped + ". The next python call runs in a new process " +
		"restored from the snapshot; its result begins with a [Sandbox restarted] notice saying what came back and what did not.\n"), nil, nil
}

// RewindArgs are rewind_session's arguments.
type RewindArgs struct {
	To   int `json:"to,omitempty" jsonschema:"the block whose state comes back"`
	Back int `json:"back,omitempty" jsonschema:"how many blocks back (default 1)"`
}

func (sv *server) rewind(ctx context.Context, req *mcp.CallToolRequest, in RewindArgs) (*mcp.CallToolResult, any, error) {
	if in.To != 0 && in.Back != 0 {
		return nil, nil, errors.New("give to or back, not both")
	}
	if in.To < 0 || in.Back < 0 {
		return nil, nil, errors.New("to is a block's number and back a count of blocks, 1 or more")
	}
	notice, _, err := sv.cur().Rewind(in.To, in.Back)
	if err != nil {
		return nil, nil, err
	}
	return textResult(strings.TrimRight(notice, "\n") + "\n"), nil, nil
}

// InterruptArgs are the interrupt tool's arguments.
type InterruptArgs struct {
	Any bool `json:"any,omitempty" jsonschema:"also a block another client runs (a person's REPL or sandbox run)"`
}

func (sv *server) interrupt(ctx context.Context, req *mcp.CallToolRequest, in InterruptArgs) (*mcp.CallToolResult, any, error) {
	msg, err := sv.cur().Interrupt(in.Any)
	switch {
	case errors.Is(err, client.ErrNotRunning):
		msg = "no block is running; nothing was interrupted"
	case err != nil:
		res := textResult(sentence(err.Error()))
		res.IsError = true
		return res, nil, nil
	}
	return textResult(sentence(msg)), nil, nil
}

// sentence is a host's answer as a line of its own: "Interrupted …\n".
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + ".\n"
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
