//go:build !unix

package cmd

import (
	"errors"
	"os"
)

// openNonBlocking is openAppend's open: append, create (0644). Without
// Unix named pipes there is nothing that could block.
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
}

// accessWrite checks that this process may write to the existing file at
// path by opening it for writing.
func accessWrite(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

// dup is never needed without Unix named pipes (holdPipe holds none).
func dup(uintptr) (uintptr, error) {
	return 0, errors.New("duplicating a descriptor: not supported here")
}
