package tools

import (
	"fmt"
	"io/fs"
	"syscall"
)

// kindError is a tool's failure of a kind callers tell apart with
// errors.Is, not by its text: fs.ErrNotExist (a missing file),
// fs.ErrPermission (a path outside the roots, hidden or read-only, or a
// command that cannot run confined), syscall.EISDIR (a folder where a
// file is wanted). The host turns these into FileNotFoundError,
// PermissionError and IsADirectoryError.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// failure is a kindError of kind with a formatted message.
func failure(kind error, format string, args ...any) error {
	return &kindError{msg: fmt.Sprintf(format, args...), kind: kind}
}

// The kinds, named for the call sites.
var (
	errMissing = fs.ErrNotExist
	errRefused = fs.ErrPermission
	errIsDir   = error(syscall.EISDIR)
)
