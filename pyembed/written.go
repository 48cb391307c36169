package pyembed

/*
#include "written.h"
*/
import "C"

import "fmt"

// InstallWriteNotes makes the sandbox child note, in C, the files its
// Python code opens for writing or renames onto, of the kinds the host
// checks after each block, and registers the built-in module _vis_written
// that hands them over (vis_sandbox.checks). Once, before the interpreter
// starts (Main).
func (l *Library) InstallWriteNotes() error {
	if msg := C.vis_written_install(); msg != nil {
		return fmt.Errorf("the write notes: %s", C.GoString(msg))
	}
	return nil
}
