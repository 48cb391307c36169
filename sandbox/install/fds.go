package install

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeInherited marks every descriptor of this process above 2 close-on-
// exec, so that uv gets its standard streams and nothing else: Go opens
// its own files that way, but a descriptor inherited from the client
// that started the host, or made by C code, may not be. (exec.Cmd then
// passes what it was given on purpose: dup2 clears the flag on the copy.)
func closeInherited() error {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		if entries, err = os.ReadDir("/dev/fd"); err != nil {
			return fmt.Errorf("list the open descriptors: %w", err)
		}
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue // closed meanwhile (the listing's own), or marked already
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags|unix.FD_CLOEXEC); err != nil {
			return fmt.Errorf("mark descriptor %d close-on-exec: %w", fd, err)
		}
	}
	return nil
}
