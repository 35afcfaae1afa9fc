//go:build linux

// Package lazyfs is a filesystem that can forget what was not synced, as a
// power cut would: a FUSE passthrough (go-fuse's loopback) of a backing
// directory that records, until an fsync makes them durable, the writes to
// each file and the entries created in each directory, and on Cut undoes
// them all. rmqtorture mounts one over a broker's data directory for the
// power-loss fault (docs/power-loss.md): a SIGKILL keeps the kernel's page
// cache, so only this shows what a confirm promised that was never on disk.
//
// The idea is LazyFS's (Jepsen's jepsen.lazyfs; "When Amnesia Strikes",
// VLDB 2024), written here on github.com/hanwen/go-fuse/v2. What is kept
// and what is lost is stated on tracker.
//
// Mounting needs /dev/fuse and root (or fusermount3): Mount fails with the
// reason otherwise. Mounts are of type FSType ("fuse.rmqtorture-lazyfs"),
// so that Mounts finds those of a process that died.
package lazyfs

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/moby/sys/mountinfo"
)

// FSType is the type /proc/mounts gives a lazyfs mount.
const FSType = "fuse." + fsName

const fsName = "rmqtorture-lazyfs"

// FS is one mounted lazyfs.
type FS struct {
	Backing    string // the directory that holds the data
	Mountpoint string // where it is mounted

	t      *tracker
	server *fuse.Server
	once   sync.Once
	err    error
}

// Mount mounts a lazyfs of backing (an existing directory) on mountpoint
// (an existing, empty directory). Other users may use it (allow_other),
// with the kernel checking permissions as on a plain filesystem
// (default_permissions); files are created with the caller's uid and gid.
// The kernel caches no entry, attribute or missing name, so that what Cut
// removes is gone at once; the cost is measured in docs/power-loss.md.
func Mount(backing, mountpoint string) (*FS, error) {
	root, err := fs.NewLoopbackRoot(backing)
	if err != nil {
		return nil, fmt.Errorf("lazyfs: backing directory %s: %w", backing, err)
	}
	t := newTracker(backing)
	wrapped := &node{LoopbackNode: root.(*fs.LoopbackNode), t: t}
	root.(*fs.LoopbackNode).RootData.RootNode = wrapped
	var zero time.Duration
	srv, err := fs.Mount(mountpoint, wrapped, &fs.Options{
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{
			AllowOther:  true,
			FsName:      backing,
			Name:        fsName,
			Options:     []string{"default_permissions"},
			DirectMount: true,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("lazyfs: mount %s on %s: %w", backing, mountpoint, err)
	}
	return &FS{Backing: backing, Mountpoint: mountpoint, t: t, server: srv}, nil
}

// Cut drops every write and creation not made durable since the mount or
// the previous Cut (see tracker), as a power cut would, and says what it
// took. Nothing may use the mount meanwhile: the broker's processes must
// be dead. The files' pages in the kernel's cache are dropped on their
// next open (lazyfs never asks the kernel to keep them).
func (f *FS) Cut() (Dropped, error) {
	return f.t.cut()
}

// WriteBack makes everything written so far durable, as the kernel's
// writeback would have (see tracker): the next Cut drops only what is
// written after it and not synced.
func (f *FS) WriteBack() { f.t.writeBack() }

// Unmount unmounts f, lazily when it is still busy (a container that has
// not let go yet): the mount is gone from the namespace either way. Calling
// it again returns the first call's error.
func (f *FS) Unmount() error {
	f.once.Do(func() {
		if err := f.server.Unmount(); err != nil {
			if lerr := syscall.Unmount(f.Mountpoint, syscall.MNT_DETACH); lerr != nil && !errors.Is(lerr, syscall.EINVAL) {
				f.err = fmt.Errorf("lazyfs: unmount %s: %w (and lazily: %v)", f.Mountpoint, err, lerr)
			}
		}
	})
	return f.err
}

// Mounts lists the mountpoints of every lazyfs mounted in this mount
// namespace (/proc/self/mountinfo, read by moby/sys/mountinfo): those of a
// process that died without unmounting stay there, unusable ("transport
// endpoint is not connected"), until unmounted.
func Mounts() ([]string, error) {
	infos, err := mountinfo.GetMounts(mountinfo.FSTypeFilter(FSType))
	if err != nil {
		return nil, err
	}
	out := make([]string, len(infos))
	for i, m := range infos {
		out[i] = m.Mountpoint
	}
	return out, nil
}

// UnmountPath unmounts the lazyfs at mountpoint lazily (MNT_DETACH): for
// one whose process is gone, and by cleanup.
func UnmountPath(mountpoint string) error {
	if err := syscall.Unmount(mountpoint, syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("lazyfs: unmount %s: %w", mountpoint, err)
	}
	return nil
}
