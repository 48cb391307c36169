package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Limits of cat.
const (
	DefaultCatLines = 2000
	// MaxCatBytes caps the text of one cat, whatever the line limit.
	MaxCatBytes = 256 << 10
	// MaxLineBytes cuts a longer line (minified code, data) with a note.
	MaxLineBytes = 2000
	// sniffBytes is how much of a file decides whether it is binary: a
	// NUL byte in it makes the file binary, as git decides.
	sniffBytes = 8000
	// MaxScanBytes is how much of one file cat counts and grep searches:
	// the host reads no more of it, whatever the session's code asks.
	MaxScanBytes = 64 << 20
	// checkEvery is how many lines pass between two looks at whether the
	// call was abandoned (its block ended or was interrupted).
	checkEvery = 4096
)

// CatResult is a part of a text file as numbered lines.
type CatResult struct {
	Path   string `json:"path"`   // the file, as the caller named it
	Text   string `json:"text"`   // numbered lines: "   12\ttext"
	Offset int    `json:"offset"` // lines skipped before the first shown
	Lines  int    `json:"lines"`  // lines shown
	Total  int    `json:"total"`  // lines in the file
	// Next is the offset that reads on, 0 when the end was shown.
	Next int `json:"next"`
	// Note says what was cut and how to read more; empty when nothing was.
	Note string `json:"note"`
}

// Cat returns at most limit lines (DefaultCatLines when limit <= 0) of a
// text file, after skipping offset lines (0 starts at line 1), numbered
// from 1. Lines longer than MaxLineBytes are cut, and the text stops at
// MaxCatBytes; Note then says how to read on: cat(path, offset=Next).
func Cat(ctx context.Context, a Access, path string, offset, limit int) (CatResult, error) {
	if offset < 0 {
		return CatResult{}, fmt.Errorf("cat %s: offset %d is negative (0 starts at the first line)", path, offset)
	}
	if limit <= 0 {
		limit = DefaultCatLines
	}
	r, err := a.resolve(path, false)
	if err != nil {
		return CatResult{}, fmt.Errorf("cat: %w", err)
	}
	f, err := openText(a, r)
	if err != nil {
		return CatResult{}, fmt.Errorf("cat: %w", err)
	}
	defer f.Close()
	res := CatResult{Path: r.Shown, Offset: offset}
	var text strings.Builder
	cutLines := 0
	full := false // the byte cap stopped the text
	scan := &scanned{r: f, left: MaxScanBytes}
	br := bufio.NewReaderSize(scan, 64<<10)
	for n := 0; ; n++ {
		if n%checkEvery == 0 && ctx.Err() != nil {
			return CatResult{}, ctx.Err()
		}
		line, err := readLine(br, MaxLineBytes)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return CatResult{}, fmt.Errorf("cat %s: %w", r.Shown, err)
		}
		res.Total++
		if n < offset || res.Lines >= limit || full {
			continue
		}
		row := fmt.Sprintf("%5d\t%s\n", n+1, line)
		if text.Len()+len(row) > MaxCatBytes && res.Lines > 0 {
			full = true
			continue
		}
		if line.cut > 0 {
			cutLines++
		}
		text.WriteString(row)
		res.Lines++
	}
	res.Text = text.String()
	var notes []string
	switch {
	case res.Total == 0:
		notes = append(notes, "empty file")
	case offset >= res.Total:
		notes = append(notes, fmt.Sprintf("offset %d is past the end: the file has %d lines", offset, res.Total))
	case offset+res.Lines < res.Total:
		res.Next = offset + res.Lines
		notes = append(notes, fmt.Sprintf("lines %d-%d of %d shown; read more with cat(%q, offset=%d)",
			offset+1, res.Next, res.Total, r.Shown, res.Next))
	}
	if cutLines > 0 {
		notes = append(notes, fmt.Sprintf("%d long lines cut at %d bytes (shell(\"sed -n 'N,Mp' FILE\") shows them whole)", cutLines, MaxLineBytes))
	}
	if scan.cut {
		notes = append(notes, fmt.Sprintf("only the first %d MiB were read, so the file has more than %d lines (shell(\"sed -n 'N,Mp' FILE\") reads past it)", MaxScanBytes>>20, res.Total))
	}
	res.Note = strings.Join(notes, "; ")
	return res, nil
}

// scanned reads at most left bytes of r, and says whether r had more.
type scanned struct {
	r    io.Reader
	left int64
	cut  bool
}

func (s *scanned) Read(p []byte) (int, error) {
	if s.left <= 0 {
		var one [1]byte
		if n, _ := s.r.Read(one[:]); n > 0 {
			s.cut = true
		}
		return 0, io.EOF
	}
	if int64(len(p)) > s.left {
		p = p[:s.left]
	}
	n, err := s.r.Read(p)
	s.left -= int64(n)
	return n, err
}

// errBinary is the error of openText for a binary file.
var errBinary = errors.New("binary file")

// openText opens a resolved path for reading, beneath its root, when it
// is a regular text file: directories, devices, pipes and binary files
// are refused.
func openText(a Access, r resolved) (*os.File, error) {
	f, err := a.open(r.Real, unix.O_RDONLY|unix.O_NONBLOCK)
	return checkText(f, err, r)
}

// checkText keeps f, just opened for r (with err), when it is a regular
// text file, and closes it when not.
func checkText(f *os.File, err error, r resolved) (*os.File, error) {
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, failure(errMissing, "no such file: %s", r.Shown)
		}
		return nil, fmt.Errorf("%s: %w", r.Shown, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	switch {
	case st.IsDir():
		f.Close()
		return nil, failure(errIsDir, "is a directory: %s (grep searches it; shell(\"ls\") lists it)", r.Shown)
	case !st.Mode().IsRegular():
		f.Close()
		return nil, fmt.Errorf("not a regular file: %s (%s)", r.Shown, st.Mode().Type())
	}
	if binary, err := isBinary(f); err != nil || binary {
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Shown, err)
		}
		return nil, fmt.Errorf("%w: %s (%d bytes); cat and grep read text files", errBinary, r.Shown, st.Size())
	}
	return f, nil
}

// isBinary reads the start of f for a NUL byte and rewinds it.
func isBinary(f *os.File) (bool, error) {
	buf := make([]byte, sniffBytes)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return false, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return false, err
	}
	return bytes.IndexByte(buf[:n], 0) >= 0, nil
}

// line is one line of a file, without its newline, cut at a byte cap.
type line struct {
	text string
	cut  int // bytes cut off the end
}

// readLine reads the next line of br, keeping at most max bytes of it
// (cut at a rune boundary) however long it is, so a file
// of one 100 MB line costs no more memory than a short one. It returns
// io.EOF only when no line is left.
func readLine(br *bufio.Reader, max int) (line, error) {
	var kept []byte
	dropped, read := 0, 0
	newline := false
	for {
		chunk, err := br.ReadSlice('\n')
		read += len(chunk)
		take := min(max-len(kept), len(chunk))
		kept = append(kept, chunk[:take]...)
		dropped += len(chunk) - take
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return line{}, err
		}
		if read == 0 {
			return line{}, io.EOF
		}
		newline = err == nil
		break
	}
	if newline && dropped > 0 {
		dropped-- // the newline is not text
	} else if newline {
		kept = kept[:len(kept)-1]
	}
	kept = bytes.TrimSuffix(kept, []byte("\r"))
	// Keep whole runes only: a rune cut in two would show as U+FFFD.
	if dropped > 0 {
		start := len(kept) - 1
		for start > 0 && start > len(kept)-utf8.UTFMax && !utf8.RuneStart(kept[start]) {
			start--
		}
		if start >= 0 && !utf8.FullRune(kept[start:]) {
			dropped += len(kept) - start
			kept = kept[:start]
		}
	}
	return line{text: strings.ToValidUTF8(string(kept), "\uFFFD"), cut: dropped}, nil
}

// String is the line's text with a note of the bytes cut, if any.
func (l line) String() string {
	if l.cut > 0 {
		return fmt.Sprintf("%s … [%d bytes cut]", l.text, l.cut)
	}
	return l.text
}
