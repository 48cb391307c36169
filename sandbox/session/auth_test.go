package session

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

// serveOne accepts one connection, authenticates it with key and sends
// back the first line after the key (or the error).
func serveOne(t *testing.T, ln net.Listener, key []byte) <-chan string {
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		r, err := Authenticate(c, key)
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		line, _ := bufio.NewReader(r).ReadString('\n')
		got <- line
	}()
	return got
}

func TestKeyAndAuthenticate(t *testing.T) {
	f, err := Create(t.TempDir(), Meta{Name: "s", Workspace: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	key, err := f.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(f.KeyPath()); err != nil || st.Mode().Perm() != 0o600 || st.Size() != 64 {
		t.Fatalf("key file: %v %v", st, err)
	}
	ln, err := f.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	got := serveOne(t, ln, key)
	c, err := f.Connect()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(c, "request")
	if line := <-got; line != "request\n" {
		t.Errorf("with the key: %q", line)
	}
	c.Close()

	for _, first := range []string{"request\n", `{"v":1,"key":"` + strings.Repeat("a", 64) + `"}` + "\n", `{"v":1,"key":"` + string(key[:63]) + `"}` + "\n"} {
		got := serveOne(t, ln, key)
		c, err := f.dial()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(c, first)
		if line := <-got; !strings.Contains(line, "this session's key") {
			t.Errorf("%q let in: %q", first, line)
		}
		c.Close()
	}

	// A key file the jail replaced is not read.
	os.Remove(f.KeyPath())
	if err := syscall.Mkfifo(f.KeyPath(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Connect(); err == nil || errors.Is(err, ErrNoHost) {
		t.Errorf("a FIFO as the key: %v", err)
	}
	os.Remove(f.KeyPath())
	if _, err := f.NewKey(); err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if _, err := f.Connect(); !errors.Is(err, ErrNoHost) {
		t.Errorf("no host: %v", err)
	}
}

// BenchmarkConnect is what the key costs a client and its host: connect,
// read and present the key, check it (compare with the connect alone).
func BenchmarkConnect(b *testing.B) {
	f, err := Create(b.TempDir(), Meta{Name: "s", Workspace: "/w"})
	if err != nil {
		b.Fatal(err)
	}
	key, err := f.NewKey()
	if err != nil {
		b.Fatal(err)
	}
	ln, err := f.Listen()
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	for _, c := range []struct {
		name    string
		connect func() (net.Conn, error)
		check   bool
	}{{"dial", f.dial, false}, {"key", f.Connect, true}} {
		b.Run(c.name, func(b *testing.B) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := 0; i < b.N; i++ {
					conn, err := ln.Accept()
					if err != nil {
						return
					}
					if c.check {
						if _, err := Authenticate(conn, key); err != nil {
							b.Error(err)
						}
					}
					conn.Write([]byte("\n"))
					conn.Close()
				}
			}()
			buf := make([]byte, 1)
			for i := 0; i < b.N; i++ {
				conn, err := c.connect()
				if err != nil {
					b.Fatal(err)
				}
				conn.Read(buf)
				conn.Close()
			}
			<-done
		})
	}
}
