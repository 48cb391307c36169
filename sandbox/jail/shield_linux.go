package jail

// #include <stdlib.h>
// int vis_jail_mount_ns_errno(void);
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// mountNamespace reports whether this process has a mount namespace of
// its own, made by the C constructor (early_linux.c) before any thread.
func mountNamespace() error {
	switch e := int(C.vis_jail_mount_ns_errno()); e {
	case 0:
		return nil
	case -1:
		return errors.New("it was not started as a jailed child")
	default:
		return syscall.Errno(e)
	}
}

// errNoNamespace: Apply goes on without the mounts when the shield
// protects nothing inside the roots, and says what is missing.
var errNoNamespace = errors.New("no mount namespace")

// applyShield mounts s in this process's own mount namespace: clones of
// the writable roots (and of Shown) taken first (open_tree), every mount
// made read-only (recursively from /), then, outer first, the clones
// mounted back over their places (Shown's read-only), each read-only path
// bound read-only over itself, and the sessions folder covered by an
// empty tmpfs (which shows the clones inside it, then turns read-only). It needs the capability to
// mount, so it runs before dropCapabilities; the jailed code can then
// neither unmount nor remount (no capabilities, and seccomp refuses the
// mount calls). Without a namespace, a shield that protects something
// inside the roots is an error saying how to do without; one that does
// not is errNoNamespace.
func applyShield(s Shield, roots []string) error {
	if err := mountNamespace(); err != nil {
		if !s.Protects(roots) {
			return fmt.Errorf("%w (%w)", errNoNamespace, err)
		}
		return fmt.Errorf("%s must stay read-only to the jail, which needs a mount namespace, and this process could not make one (%w): allow user namespaces, use a workspace and roots that hold no .git, not your home folder and not vis-agent's folder (or VIS_HOME elsewhere), or run with --no-jail",
			strings.Join(s.ReadOnly, ", "), err)
	}
	// Nothing mounted here may reach the parent's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	clones := map[string]int{}
	defer func() {
		for _, fd := range clones {
			unix.Close(fd)
		}
	}()
	for _, w := range append(append([]string(nil), s.Writable...), s.Shown...) {
		fd, err := unix.OpenTree(unix.AT_FDCWD, w, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return fmt.Errorf("clone %s: %w", w, err)
		}
		clones[w] = fd
	}
	readOnly := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &readOnly); err != nil {
		return fmt.Errorf("make the mounts read-only: %w", err)
	}
	type step struct {
		path string
		do   func() error
	}
	var steps []step
	put := func(w string, writable bool) {
		fd := clones[w]
		steps = append(steps, step{w, func() error {
			if s.Sessions != "" && within(w, s.Sessions) && w != s.Sessions {
				if err := os.MkdirAll(w, 0o700); err != nil {
					return fmt.Errorf("make a place for %s: %w", w, err)
				}
			}
			if !writable {
				if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &readOnly); err != nil {
					return fmt.Errorf("keep %s read-only: %w", w, err)
				}
			}
			if err := unix.MoveMount(fd, "", unix.AT_FDCWD, w, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
				return fmt.Errorf("mount %s again: %w", w, err)
			}
			return nil
		}})
	}
	for _, w := range s.Writable {
		put(w, true)
	}
	for _, w := range s.Shown {
		put(w, false)
	}
	for _, p := range s.ReadOnly {
		steps = append(steps, step{p, func() error { return bindReadOnly(p) }})
	}
	if s.Sessions != "" {
		steps = append(steps, step{s.Sessions, func() error {
			err := unix.Mount("tmpfs", s.Sessions, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=64k")
			if err != nil {
				return fmt.Errorf("cover %s: %w", s.Sessions, err)
			}
			return nil
		}})
	}
	// Outer first; at one depth the writable clone goes first, what keeps
	// it read-only over it.
	sort.SliceStable(steps, func(i, j int) bool { return depth(steps[i].path) < depth(steps[j].path) })
	for _, st := range steps {
		if err := st.do(); err != nil {
			return err
		}
	}
	if s.Sessions != "" {
		if err := unix.MountSetattr(unix.AT_FDCWD, s.Sessions, 0, &readOnly); err != nil {
			return fmt.Errorf("make %s read-only: %w", s.Sessions, err)
		}
	}
	// The working folder still names the mount it was entered on, now
	// read-only: enter it again, through the mounts on top.
	wd, err := os.Getwd()
	if err == nil {
		err = unix.Chdir(wd)
	}
	if err != nil {
		return fmt.Errorf("enter the working folder again: %w", err)
	}
	return nil
}

// bindReadOnly mounts a read-only copy of the tree at p over p.
func bindReadOnly(p string) error {
	fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("keep %s read-only: %w", p, err)
	}
	defer unix.Close(fd)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("keep %s read-only: %w", p, err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("keep %s read-only: %w", p, err)
	}
	return nil
}
