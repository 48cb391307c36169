package attachments

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a helper process attaching to a store:
// "DIR loop" attaches until killed, saying "ok ID" after each;
// "DIR count N" attaches N versions of same.txt.
const helperEnv = "VIS_TEST_ATTACH_HELPER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		if err := helper(strings.Fields(spec)); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func helper(args []string) error {
	s, err := Open(args[0])
	if err != nil {
		return err
	}
	defer s.Close()
	if args[1] == "count" {
		n, _ := strconv.Atoi(args[2])
		for i := 0; i < n; i++ {
			if _, err := s.Attach(New{Session: "s", Filename: "same.txt"}, strings.NewReader(fmt.Sprintf("%d-%d", os.Getpid(), i)), Limits{}); err != nil {
				return err
			}
		}
		return nil
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		// Sizes up to 256 KiB; every fourth attach repeats earlier bytes.
		size := rand.IntN(256 << 10)
		seed := uint64(i)
		if i%4 == 3 {
			seed = 0
		}
		data := make([]byte, size)
		r := rand.New(rand.NewPCG(seed, 1))
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		d, err := s.Attach(New{Session: "s", Filename: fmt.Sprintf("f%d.bin", i%7)}, strings.NewReader(string(data)), Limits{})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "ok %s\n", d.ID)
		out.Flush()
	}
}

func startHelper(t *testing.T, spec string) (*exec.Cmd, io.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+spec)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, out
}

// A process killed (SIGKILL) at any moment of its attaches leaves a store
// that opens, with every acknowledged attach in it and every row's bytes
// there and right.
func TestCrashLeavesRowsWithBytes(t *testing.T) {
	dir := t.TempDir()
	acked := map[string]bool{}
	for round := 0; round < 20; round++ {
		cmd, out := startHelper(t, dir+" loop")
		lines := bufio.NewScanner(out)
		want := 1 + rand.IntN(15)
		for n := 0; n < want && lines.Scan(); n++ {
			acked[strings.TrimPrefix(lines.Text(), "ok ")] = true
		}
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		for lines.Scan() { // acknowledged before the kill landed
			acked[strings.TrimPrefix(lines.Text(), "ok ")] = true
		}
		cmd.Wait()
	}
	s := openStore(t, dir)
	list, err := s.List("s")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, d := range list {
		rows[d.ID] = true
		r, err := s.Read(d)
		if err != nil {
			t.Fatalf("row %s (%s v%d) has no bytes: %v", d.ID, d.Filename, d.Version, err)
		}
		h := sha256.New()
		n, err := io.Copy(h, r)
		r.Close()
		if err != nil || n != d.Size || hex.EncodeToString(h.Sum(nil)) != d.SHA256 {
			t.Fatalf("row %s: %d bytes (want %d), sha256 mismatch or %v", d.ID, n, d.Size, err)
		}
	}
	for id := range acked {
		if !rows[id] {
			t.Errorf("acknowledged attach %s is missing", id)
		}
	}
	if len(acked) < 20 {
		t.Fatalf("only %d attaches were acknowledged", len(acked))
	}
	// The store still takes attaches, versions going on.
	attach(t, s, "s", "f0.bin", "after", false)
}

// Two processes attaching to one filename at once: versions 1..2N, none
// lost or doubled.
func TestTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	const n = 30
	a, _ := startHelper(t, fmt.Sprintf("%s count %d", dir, n))
	b, _ := startHelper(t, fmt.Sprintf("%s count %d", dir, n))
	for _, c := range []*exec.Cmd{a, b} {
		if err := c.Wait(); err != nil {
			t.Fatalf("helper: %v", err)
		}
	}
	s := openStore(t, dir)
	checkVersions(t, s, "same.txt", 2*n)
}
