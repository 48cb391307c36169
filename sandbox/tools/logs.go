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
// bounded whatever the size of the log.
func logLines(log *spool, path string, n int) ([]string, error) {
	want := min(max(n, -n), MaxLogLines)
	if n == 0 {
		want = MaxLogLines
	}
	log.mu.Lock()
	total, tail := log.total, log.tailBytes()
	log.mu.Unlock()
	if n < 0 && total > log.limit {
		// The end of the output is past the spool file: the lines come
		// from the tail kept in memory.
		return tailLines(tail, total, want), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("logs: %w", err)
	}
	defer f.Close()
	size := min(total, log.limit)
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

// tailLines returns the last want lines of the tail of an output of
// total bytes, its first (partial) line dropped, after a line saying
// how much came before.
func tailLines(tail []byte, total int64, want int) []string {
	if i := bytes.IndexByte(tail, '\n'); i >= 0 {
		tail = tail[i+1:]
	}
	text := strings.TrimSuffix(strings.ToValidUTF8(string(tail), "\uFFFD"), "\n")
	lines := strings.Split(text, "\n")
	if len(lines) >= want {
		return lines[len(lines)-want:]
	}
	note := fmt.Sprintf("… [%d bytes before these lines are not kept: output past %d MiB is only counted]", total-int64(len(tail)), MaxSpoolBytes>>20)
	return append([]string{note}, lines...)
}
