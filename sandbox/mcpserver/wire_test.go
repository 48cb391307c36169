package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// pipeConn is a connection over pipes: the test writes the client's side
// to in and reads the server's lines from out.
func pipeConn(t *testing.T) (*conn, *io.PipeWriter, *bufio.Reader) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c, err := Stdio(inR, outW).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); inW.Close(); outR.Close() })
	return c.(*conn), inW, bufio.NewReader(outR)
}

func readWithin(t *testing.T, c *conn, d time.Duration) (jsonrpc.Message, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return c.Read(ctx)
}

// An oversized line is answered and skipped; the next message goes through.
func TestConnSkipsAnOversizedLine(t *testing.T) {
	c, in, out := pipeConn(t)
	go func() {
		io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`+strings.Repeat("x", maxMessage)+"\"}}\n")
		io.WriteString(in, `{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n")
	}()
	line, err := out.ReadString('\n')
	if err != nil || !strings.Contains(line, `"code":-32600`) || !strings.Contains(line, "longer than") {
		t.Fatalf("reply to an oversized line: %q %v", line, err)
	}
	m, err := readWithin(t, c, 10*time.Second)
	if r, ok := m.(*jsonrpc.Request); err != nil || !ok || r.Method != "ping" {
		t.Fatalf("the message after it: %v %v", m, err)
	}
}

// At the end of the input, Read reports EOF only once every request read
// has been answered.
func TestConnAnswersBeforeEOF(t *testing.T) {
	c, in, out := pipeConn(t)
	go func() {
		io.WriteString(in, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`+"\n")
		in.Close()
	}()
	m, err := readWithin(t, c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	eof := make(chan error, 1)
	go func() {
		_, err := c.Read(context.Background())
		eof <- err
	}()
	select {
	case err := <-eof:
		t.Fatalf("Read returned %v before the request was answered", err)
	case <-time.After(200 * time.Millisecond):
	}
	go out.ReadString('\n')
	id := m.(*jsonrpc.Request).ID
	if err := c.Write(context.Background(), &jsonrpc.Response{ID: id, Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-eof:
		if !errors.Is(err, io.EOF) {
			t.Errorf("Read after the answer: %v, want EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read did not end after the last answer")
	}
}
