package child

/*
#cgo CFLAGS: -Wall -Wextra -I${SRCDIR}/../..
#include "written.h"
*/
import "C"

import "fmt"

// installWriteNotes makes the child note, in C (written.c), the files its
// Python code opens for writing or renames onto, of the kinds the host
// checks after each block, and registers the built-in module _vis_written
// that hands them over (vis_sandbox.checks). Once, with the library loaded
// and before the interpreter starts (Main).
func installWriteNotes() error {
	if msg := C.vis_written_install(); msg != nil {
		return fmt.Errorf("the write notes: %s", C.GoString(msg))
	}
	return nil
}
