package child

/*
#cgo CFLAGS: -Wall -Wextra -I${SRCDIR}/../..
#include "hostcall.h"
*/
import "C"

import "fmt"

// installHostCall makes the built-in module _vis_host (hostcall.c) call
// the session's host over socket fd, which the process inherited; once,
// with the library loaded and before the interpreter starts (Main). The
// descriptor's number stays in C memory: no Python object holds it.
func installHostCall(fd int) error {
	if msg := C.vis_host_install(C.int(fd)); msg != nil {
		return fmt.Errorf("the host-call module: %s", C.GoString(msg))
	}
	return nil
}
