//go:build unix

package docker

import (
	"errors"
	"syscall"
)

// processExists reports whether a process has pid: signal 0 checks without
// signalling (ESRCH: none; EPERM: it exists, under another user).
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// lockExclusive takes f's exclusive advisory lock without waiting (flock(2)):
// an error when another process holds it. Closing f releases it.
func lockExclusive(fd uintptr) error {
	return syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
}
