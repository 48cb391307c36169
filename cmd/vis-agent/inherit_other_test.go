//go:build !linux

package main

import "errors"

// execInheriting sets dispositions with Linux's system calls only.
func execInheriting(mode string, argv []string) error {
	return errors.New("the signal exec helper runs on Linux only")
}
