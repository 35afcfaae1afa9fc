//go:build !linux

package lazyfs

import (
	"errors"
	"runtime"
)

// FSType is the type /proc/mounts gives a lazyfs mount.
const FSType = "fuse.rmqtorture-lazyfs"

var errOS = errors.New("lazyfs: a filesystem that can forget needs Linux's FUSE, not " + runtime.GOOS)

// FS is one mounted lazyfs (Linux only).
type FS struct {
	Backing    string
	Mountpoint string
}

// Mount fails: lazyfs needs Linux.
func Mount(backing, mountpoint string) (*FS, error) { return nil, errOS }

// Cut fails: lazyfs needs Linux.
func (f *FS) Cut() (Dropped, error) { return Dropped{}, errOS }

// WriteBack does nothing: lazyfs needs Linux.
func (f *FS) WriteBack() {}

// Unmount fails: lazyfs needs Linux.
func (f *FS) Unmount() error { return errOS }

// Mounts lists none: lazyfs needs Linux.
func Mounts() ([]string, error) { return nil, nil }

// UnmountPath fails: lazyfs needs Linux.
func UnmountPath(string) error { return errOS }
