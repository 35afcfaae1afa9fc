//go:build unix

package cmd

import (
	"errors"
	"os"
	"syscall"
)

// openNonBlocking is openAppend's open: append, create (0644), without
// blocking on a named pipe that has no reader.
func openNonBlocking(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NONBLOCK, 0o644)
	if errors.Is(err, syscall.ENXIO) {
		return nil, errors.New("a named pipe with no reader (writing would wait for one for ever)")
	}
	return f, err
}

// accessWrite checks that this process may write to the existing file at
// path (access(2), W_OK), without opening it.
func accessWrite(path string) error { return syscall.Access(path, 2) }

// dup duplicates the descriptor fd.
func dup(fd uintptr) (uintptr, error) {
	n, err := syscall.Dup(int(fd))
	return uintptr(n), err
}
