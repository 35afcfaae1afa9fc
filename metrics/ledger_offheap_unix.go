//go:build unix

package metrics

import "golang.org/x/sys/unix"

// mapAnonymous maps size zeroed bytes of private anonymous memory (mmap(2)),
// outside the Go heap; ok is false when the system refuses.
func mapAnonymous(size int) (mem []byte, ok bool) {
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	return mem, err == nil
}

// unmap releases a mapAnonymous mapping.
func unmap(mem []byte) { _ = unix.Munmap(mem) }
