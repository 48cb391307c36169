package pyembed

/*
#include "hostcall.h"
*/
import "C"

import "fmt"

// InstallHostCall makes the built-in module _vis_host call the sandbox
// host over socket fd, which the process inherited; a sandbox child calls
// it once, before the interpreter starts (Main). The descriptor's number
// stays in C memory: no Python object holds it.
func (l *Library) InstallHostCall(fd int) error {
	if msg := C.vis_host_install(C.int(fd)); msg != nil {
		return fmt.Errorf("the host-call module: %s", C.GoString(msg))
	}
	return nil
}
