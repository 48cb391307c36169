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

// takeEarlyChild returns the interpreter child the host's C constructor
// started before Go (early_linux.c), once; nil when there is none.
// dropsPrivileges: it was started with protocol.DropPrivilegesFlag;
// ownNetwork: with protocol.NetworkFlag.
func takeEarlyChild() (s *spawned, dropsPrivileges, ownNetwork bool) {
	var e C.struct_vis_early
	if C.vis_host_take_early(&e) == 0 {
		return nil, false, false
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
		return nil, false, false
	}
	return &spawned{process: process, link: link, calls: calls, stacks: files[2], stdout: files[3], stderr: files[4]},
		e.drops_privileges != 0, e.own_network != 0
}
