package host

/*
#cgo CFLAGS: -Wall -Wextra
#include "early_linux.h"
*/
import "C"

import (
	"net"
	"os"
)

// earlyChild is the interpreter child the host's C constructor started
// before Go (early_linux.c). dropsPrivileges: it was started with
// protocol.DropPrivilegesFlag; ownNetwork: with protocol.NetworkFlag.
type earlyChild struct {
	s                           *spawned
	dropsPrivileges, ownNetwork bool
}

// takeEarlyChild returns the early child, once; nil when there is none.
func takeEarlyChild() *earlyChild {
	var e C.struct_vis_early
	if C.vis_host_take_early(&e) == 0 {
		return nil
	}
	files := []*os.File{os.NewFile(uintptr(e.link), "link"), os.NewFile(uintptr(e.calls), "calls"),
		os.NewFile(uintptr(e.stacks), "stacks"), os.NewFile(uintptr(e.out), "stdout"), os.NewFile(uintptr(e.err), "stderr")}
	process, err := os.FindProcess(int(e.pid))
	var link, calls net.Conn
	if err == nil {
		link, err = net.FileConn(files[0])
	}
	if err == nil {
		calls, err = net.FileConn(files[1])
	}
	files[0].Close()
	files[1].Close()
	if err != nil {
		// Without its links it cannot serve: it sees EOF and ends.
		for _, c := range []net.Conn{link, calls} {
			if c != nil {
				c.Close()
			}
		}
		for _, f := range files[2:] {
			f.Close()
		}
		if process != nil {
			process.Kill()
			process.Wait()
		}
		return nil
	}
	return &earlyChild{s: &spawned{process: process, link: link, calls: calls, stacks: files[2], stdout: files[3], stderr: files[4]},
		dropsPrivileges: e.drops_privileges != 0, ownNetwork: e.own_network != 0}
}
