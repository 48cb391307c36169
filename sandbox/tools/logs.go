package tools

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxLogLines caps the lines one Logs call returns.
const MaxLogLines = 10000

// logLines reads lines of a command's log (stdout and stderr as they
// came): the first n when n > 0, the last -n when n < 0, all of them
// when n is 0. At most MaxLogLines are returned, each cut at
// MaxLineBytes; when n is 0 and more are left, a last line says so. Memory stays
// bounded whatever the size of the log. A log deleted to make room for
// newer ones gives its last lines, kept in memory, with a line saying so.
func logLines(log *spool, n int) ([]string, error) {
	want := min(max(n, -n), MaxLogLines)
	if n == 0 {
		want = MaxLogLines
	}
	log.mu.Lock()
	total, tail := log.total, log.tailBytes()
	log.mu.Unlock()
	size, dropped := log.budget.kept(log.disk)
	if dropped {
		lines, _ := tailLines(tail, want)
		note := fmt.Sprintf("… [its output was deleted from disk to make room for newer commands'; its last %d lines, kept in memory:]", len(lines))
		return append([]string{note}, lines...), nil
	}
	if n < 0 && total > size {
		// The end of the output is past the spool file: the lines come
		// from the tail kept in memory.
		lines, kept := tailLines(tail, want)
		if len(lines) < want {
			note := fmt.Sprintf("… [%d bytes before these lines are not kept: only the first %d are on disk]", total-kept, size)
			lines = append([]string{note}, lines...)
		}
		return lines, nil
	}
	f, err := os.Open(log.disk.path)
	if err != nil {
		return nil, fmt.Errorf("logs: %w", err)
	}
	defer f.Close()
	from := int64(0)
	if n < 0 {
		if from, err = lastLinesStart(f, size, want); err != nil {
			return nil, fmt.Errorf("logs: %w", err)
		}
	}
	br := bufio.NewReader(io.NewSectionReader(f, from, size-from))
	lines := []string{}
	for {
		l, err := readLine(br, MaxLineBytes)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("logs: %w", err)
		}
		if len(lines) == want {
			if n == 0 {
				lines = append(lines, fmt.Sprintf("… [more lines: logs(%d) reads the last ones]", -want))
			}
			break
		}
		lines = append(lines, l.String())
	}
	return lines, nil
}

// lastLinesStart returns the offset of the start of the last want lines
// of the first size bytes of f, reading backwards in blocks.
func lastLinesStart(f *os.File, size int64, want int) (int64, error) {
	buf := make([]byte, 64<<10)
	end := size
	seen := 0
	// A last line without a newline is a line too.
	if size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, size-1); err != nil {
			return 0, err
		}
		if last[0] == '\n' {
			end = size - 1
		}
	}
	for end > 0 {
		start := max(0, end-int64(len(buf)))
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil {
			return 0, err
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] == '\n' {
				if seen++; seen == want {
					return start + int64(i) + 1, nil
				}
			}
		}
		end = start
	}
	return 0, nil
}

// tailLines returns the last want lines of tail, the end of an output
// (its first, partial line dropped), and how many bytes they hold.
func tailLines(tail []byte, want int) ([]string, int64) {
	if i := bytes.IndexByte(tail, '\n'); i >= 0 {
		tail = tail[i+1:]
	}
	text := strings.TrimSuffix(strings.ToValidUTF8(string(tail), "\uFFFD"), "\n")
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if len(l) > MaxLineBytes {
			lines[i] = around(l, 0, MaxLineBytes) + fmt.Sprintf(" [%d bytes cut]", len(l)-MaxLineBytes)
		}
	}
	return lines[max(len(lines)-want, 0):], int64(len(tail))
}
