package main

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sendMessage puts text on SysV message queue id, as type 1.
func sendMessage(t *testing.T, id int, text string) {
	t.Helper()
	buf := make([]byte, 8+len(text))
	binary.NativeEndian.PutUint64(buf, 1)
	copy(buf[8:], text)
	if _, _, errno := unix.Syscall6(unix.SYS_MSGSND, uintptr(id), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(text)), unix.IPC_NOWAIT, 0, 0); errno != 0 {
		t.Fatalf("msgsnd: %v", errno)
	}
}

// receiveMessage takes the next message of queue id, "" when none.
func receiveMessage(t *testing.T, id int) string {
	t.Helper()
	buf := make([]byte, 8+256)
	n, _, errno := unix.Syscall6(unix.SYS_MSGRCV, uintptr(id), uintptr(unsafe.Pointer(&buf[0])), 256, 0, unix.IPC_NOWAIT, 0)
	if errno != 0 {
		return ""
	}
	return string(buf[8 : 8+n])
}
