package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// hopHeaders are one connection's own, never forwarded.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authorization",
	"Proxy-Authenticate", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length"}

// endToEnd returns h without the hop-by-hop headers, those its
// Connection header names included.
func endToEnd(h http.Header) http.Header {
	h = h.Clone()
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
	return h
}

// forward serves one plain HTTP request over *cur (the client
// connection's server connection, replaced or closed as needed); it
// reports whether the client connection may carry another. Bodies of
// known length go between the two connections with io.CopyN, which
// splices TCP to TCP in the kernel.
func (s *Server) forward(c net.Conn, br *bufio.Reader, req *http.Request, cur **upConn) bool {
	host, port, err := target(req)
	d := Decision{Method: req.Method, Host: host, Port: port}
	if err != nil {
		d.Why = err.Error()
		s.log(d)
		refuse(c, http.StatusBadRequest, err.Error())
		return false
	}
	ctx := context.Background()
	up, _ := s.upstream(req.URL)
	addrs, err := s.decide(ctx, host, port, up != nil)
	if err != nil {
		d.Why = err.Error()
		s.log(d)
		refuse(c, http.StatusForbidden, err.Error())
		return false
	}
	if req.Header.Get("Upgrade") != "" {
		d.Why = "vis-agent: the proxy does not pass on Upgrade (a WebSocket goes through CONNECT)"
		s.log(d)
		refuse(c, http.StatusBadRequest, d.Why)
		return false
	}
	chunked := len(req.TransferEncoding) > 0
	// A client waiting for 100 Continue gets it here: the body is read
	// before the server answers.
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") && (chunked || req.ContentLength > 0) {
		if _, err := io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return false
		}
	}
	head := requestHead(req, host, port, up)
	var resp *http.Response
	for attempt := 0; ; attempt++ {
		reused := (*cur).fits(addrs, port, up)
		if reused && !quiet((*cur).conn) {
			// The server closed it (or said something unasked).
			s.closeUp(*cur)
			*cur, reused = nil, false
		}
		if !reused {
			s.putIdle(*cur)
			*cur = s.takeIdle(addrs, port, up)
			reused = *cur != nil
		}
		if !reused {
			u, err := s.dialUp(ctx, addrs, port, up)
			if err != nil {
				d.Why = err.Error()
				s.log(d)
				refuse(c, http.StatusBadGateway, fmt.Sprintf("vis-agent: cannot reach %s:%d: %v", host, port, err))
				return false
			}
			*cur = u
		}
		u := *cur
		d.Up, err = sendRequest(u, head, c, br, req, chunked)
		if err == nil {
			resp, err = readResponse(u, req, c)
		}
		if err == nil {
			break
		}
		s.closeUp(u)
		*cur = nil
		// A kept connection the server closed meanwhile: once more on
		// a new one, when no body went out.
		if reused && attempt == 0 && d.Up == 0 && !chunked && req.ContentLength <= 0 {
			continue
		}
		d.Why = err.Error()
		s.log(d)
		refuse(c, http.StatusBadGateway, fmt.Sprintf("vis-agent: cannot reach %s:%d: %v", host, port, err))
		return false
	}
	d.Allowed = true
	keep, reuse, down, err := writeResponse(c, *cur, resp, !req.Close, req.ProtoAtLeast(1, 1))
	d.Down = down
	s.log(d)
	if err != nil || !reuse {
		s.closeUp(*cur)
		*cur = nil
	}
	return err == nil && keep
}

// requestHead is the request line and headers sent on: origin form to
// the server, with the Host the decision was made on (never the
// client's Host header), or absolute form to the upstream proxy.
func requestHead(req *http.Request, host string, port int, up *url.URL) []byte {
	var b strings.Builder
	authority := host
	if strings.Contains(host, ":") {
		authority = "[" + host + "]"
	}
	if port != 80 {
		authority = net.JoinHostPort(host, strconv.Itoa(port))
	}
	uri := req.URL.RequestURI()
	if up != nil {
		uri = "http://" + authority + uri
	}
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", req.Method, uri, authority)
	h := endToEnd(req.Header)
	h.Del("Host")
	h.Del("Expect")
	h.Write(&b)
	if up != nil {
		b.WriteString(proxyAuthorization(up))
	}
	switch {
	case len(req.TransferEncoding) > 0:
		b.WriteString("Transfer-Encoding: chunked\r\n")
	case req.ContentLength > 0:
		b.WriteString("Content-Length: " + strconv.FormatInt(req.ContentLength, 10) + "\r\n")
	}
	b.WriteString("\r\n")
	return []byte(b.String())
}

// sendRequest writes head and the request's body to u; it returns the
// body's bytes sent.
func sendRequest(u *upConn, head []byte, c net.Conn, br *bufio.Reader, req *http.Request, chunked bool) (int64, error) {
	if chunked {
		w := bufio.NewWriterSize(u.conn, 32<<10)
		w.Write(head)
		cw := httputil.NewChunkedWriter(w)
		n, err := io.Copy(cw, req.Body)
		if err == nil {
			err = cw.Close()
		}
		if err == nil {
			_, err = io.WriteString(w, "\r\n")
		}
		if err == nil {
			err = w.Flush()
		}
		return n, err
	}
	if _, err := u.conn.Write(head); err != nil {
		return 0, err
	}
	if req.ContentLength <= 0 {
		return 0, nil
	}
	return copyBody(u.conn, br, c, req.ContentLength)
}

// copyBody copies n bytes: those buffered in br first, then straight
// from the connection under it (spliced).
func copyBody(dst net.Conn, br *bufio.Reader, src net.Conn, n int64) (int64, error) {
	k, err := io.CopyN(dst, br, min(int64(br.Buffered()), n))
	if err == nil && k < n {
		var m int64
		m, err = io.CopyN(dst, src, n-k)
		k += m
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return k, err
}

// readResponse reads the server's answer to req, its header bounded in
// size and time; informational answers go on to the client.
func readResponse(u *upConn, req *http.Request, c net.Conn) (*http.Response, error) {
	u.conn.SetReadDeadline(time.Now().Add(responseTimeout))
	defer u.conn.SetReadDeadline(time.Time{})
	for {
		u.lim.n.Store(maxHeaderBytes)
		resp, err := http.ReadResponse(u.br, req)
		u.lim.n.Store(-1)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 {
			return resp, nil
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return nil, errors.New("the server switched protocols, which was not asked for")
		}
		w := bufio.NewWriter(c)
		fmt.Fprintf(w, "HTTP/1.1 %s\r\n", resp.Status)
		endToEnd(resp.Header).Write(w)
		io.WriteString(w, "\r\n")
		if err := w.Flush(); err != nil {
			return nil, err
		}
	}
}

// writeResponse writes resp to the client: a body of known length, or
// one that ends when the server closes, spliced from the server's
// connection; a chunked one through Response.Write (to an HTTP/1.0
// client, unchunked until the close). keep is whether the client wants
// its connection kept. It returns whether the client's
// connection and the server's can carry another request, and the
// body's bytes.
func writeResponse(c net.Conn, u *upConn, resp *http.Response, keep, http11 bool) (keepClient, reuse bool, n int64, err error) {
	if len(resp.TransferEncoding) > 0 || resp.Trailer != nil {
		down := &counter{r: resp.Body}
		resp.Body = io.NopCloser(down)
		resp.Header = endToEnd(resp.Header)
		if !http11 {
			// An HTTP/1.0 client reads no chunks: the body, then the end.
			keep = false
			resp.TransferEncoding, resp.Trailer, resp.ContentLength = nil, nil, -1
		}
		// resp.Close now says the client's end; whether the server's
		// connection can carry another request is what the server said.
		serverClose := resp.Close
		resp.Close = !keep
		w := bufio.NewWriterSize(c, 32<<10)
		err := resp.Write(onlyWriter{w})
		if err == nil {
			err = w.Flush()
		}
		return keep, !serverClose && err == nil, down.n, err
	}
	length := resp.ContentLength
	if resp.Body == http.NoBody {
		length = 0
	}
	untilClose := length < 0
	keep = keep && !untilClose
	h := endToEnd(resp.Header)
	if resp.Body == http.NoBody && resp.ContentLength > 0 {
		h.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10)) // a HEAD answer
	} else if !untilClose && resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotModified {
		h.Set("Content-Length", strconv.FormatInt(length, 10))
	}
	if !keep {
		h.Set("Connection", "close")
	}
	w := bufio.NewWriterSize(c, 8<<10)
	fmt.Fprintf(w, "HTTP/1.1 %s\r\n", resp.Status)
	h.Write(w)
	io.WriteString(w, "\r\n")
	if err := w.Flush(); err != nil {
		return false, false, 0, err
	}
	if untilClose {
		k, _ := io.CopyN(c, u.br, int64(u.br.Buffered()))
		m, err := io.Copy(c, u.conn)
		return false, false, k + m, err
	}
	n, err = copyBody(c, u.br, u.conn, length)
	return keep, !resp.Close && err == nil, n, err
}

// counter counts the bytes read through it.
type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

// onlyWriter hides a writer's ReadFrom, so that a copy into it goes
// through its buffer.
type onlyWriter struct{ w io.Writer }

func (o onlyWriter) Write(p []byte) (int, error) { return o.w.Write(p) }
