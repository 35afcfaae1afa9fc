//go:build unix

package inputfile

import (
	"os"
	"syscall"
)

// openNonBlocking opens path read-only without waiting for a writer when it
// is a named pipe. O_NONBLOCK changes nothing for a regular file's reads
// (open(2)).
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
