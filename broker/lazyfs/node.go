//go:build linux

package lazyfs

import (
	"context"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is go-fuse's loopback node with the tracker told of every change a
// power cut would undo. go-fuse wraps each child the same way (WrapChild).
type node struct {
	*fs.LoopbackNode
	t *tracker
}

var (
	_ fs.NodeWrapChilder    = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeMknoder        = (*node)(nil)
	_ fs.NodeSymlinker      = (*node)(nil)
	_ fs.NodeLinker         = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeRmdirer        = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.NodeCopyFileRanger = (*node)(nil)
)

func (n *node) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*fs.LoopbackNode), t: n.t}
}

// backing is n's path in the backing directory.
func (n *node) backing() string {
	return filepath.Join(n.RootData.Path, n.Path(nil))
}

// ino is the backing inode number of the entry at path p (0 when it
// cannot be read).
func ino(p string) uint64 {
	var st syscall.Stat_t
	if syscall.Lstat(p, &st) != nil {
		return 0
	}
	return st.Ino
}

// created records the new entry name of n.
func (n *node) created(name string) {
	if child := ino(filepath.Join(n.backing(), name)); child != 0 {
		n.t.create(child)
	}
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	existed := ino(filepath.Join(n.backing(), name)) != 0
	if existed && flags&syscall.O_TRUNC != 0 {
		if errno := n.truncatePath(filepath.Join(n.backing(), name), 0); errno != 0 {
			return nil, nil, 0, errno
		}
		flags &^= syscall.O_TRUNC
	}
	ch, fh, ff, errno := n.LoopbackNode.Create(ctx, name, readable(flags), mode, out)
	if errno != 0 {
		return ch, fh, ff, errno
	}
	if !existed {
		n.created(name)
	}
	return ch, n.wrap(fh, filepath.Join(n.backing(), name)), ff, 0
}

// truncatePath sets the size of the backing file p (truncate(2): no open
// file), recorded.
func (n *node) truncatePath(p string, size int64) syscall.Errno {
	return fs.ToErrno(n.t.truncate(-1, p, ino(p), size, func() error { return syscall.Truncate(p, size) }))
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	p := n.backing()
	if flags&syscall.O_TRUNC != 0 {
		if errno := n.truncatePath(p, 0); errno != 0 {
			return nil, 0, errno
		}
		flags &^= syscall.O_TRUNC
	}
	fh, ff, errno := n.LoopbackNode.Open(ctx, readable(flags))
	if errno != 0 {
		return fh, ff, errno
	}
	return n.wrap(fh, p), ff, 0
}

// readable opens a write-only file for reading and writing as well: the
// tracker reads the bytes a write will overwrite. The kernel has already
// checked the caller's own access mode (default_permissions).
func readable(flags uint32) uint32 {
	if flags&syscall.O_ACCMODE == syscall.O_WRONLY {
		return flags&^syscall.O_ACCMODE | syscall.O_RDWR
	}
	return flags
}

// wrap puts the tracker between a loopback file handle and its writes.
func (n *node) wrap(fh fs.FileHandle, p string) fs.FileHandle {
	lf, ok := fh.(*fs.LoopbackFile)
	if !ok {
		return fh
	}
	fd, _ := lf.PassthroughFd()
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil {
		return fh
	}
	return &file{LoopbackFile: lf, t: n.t, fd: fd, ino: st.Ino}
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ch, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	if errno == 0 {
		n.created(name)
	}
	return ch, errno
}

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ch, errno := n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
	if errno == 0 {
		n.created(name)
	}
	return ch, errno
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ch, errno := n.LoopbackNode.Symlink(ctx, target, name, out)
	if errno == 0 {
		n.created(name)
	}
	return ch, errno
}

// Link adds a name to an existing file; the tracker keys entries by inode,
// so a hard link's loss is not told from its file's: a new link to a
// synced file survives the cut.
func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.LoopbackNode.Link(ctx, unwrap(target), name, out)
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	moved := ino(filepath.Join(n.backing(), name))
	var replaced uint64
	var replacedLinks uint64
	np, _ := newParent.(*node)
	if np != nil {
		var st syscall.Stat_t
		if syscall.Lstat(filepath.Join(np.backing(), newName), &st) == nil {
			replaced, replacedLinks = st.Ino, uint64(st.Nlink)
		}
	}
	errno := n.LoopbackNode.Rename(ctx, name, unwrap(newParent), newName, flags)
	if errno != 0 || np == nil {
		return errno
	}
	// The entry moved keeps its inode, so the tracker needs nothing for
	// it; one it replaced is gone.
	if replaced != 0 && replaced != moved && replacedLinks <= 1 && flags&renameExchange == 0 {
		n.t.removed(replaced)
	}
	return 0
}

// renameExchange is renameat2(2)'s RENAME_EXCHANGE.
const renameExchange = 1 << 1

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	var st syscall.Stat_t
	p := filepath.Join(n.backing(), name)
	statErr := syscall.Lstat(p, &st)
	errno := n.LoopbackNode.Unlink(ctx, name)
	if errno == 0 && statErr == nil && st.Nlink <= 1 {
		n.t.removed(st.Ino)
	}
	return errno
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	removed := ino(filepath.Join(n.backing(), name))
	errno := n.LoopbackNode.Rmdir(ctx, name)
	if errno == 0 && removed != 0 {
		n.t.removed(removed)
	}
	return errno
}

// Setattr records a size change made without an open file (truncate(2)):
// one made through a handle goes through file.Setattr.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok {
		if _, isFile := f.(*file); !isFile {
			if errno := n.truncatePath(n.backing(), int64(sz)); errno != 0 {
				return errno
			}
			in.Valid &^= fuse.FATTR_SIZE
		}
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

// CopyFileRange is refused, so that the kernel copies through read and
// write, which the tracker sees.
func (n *node) CopyFileRange(context.Context, fs.FileHandle, uint64, *fs.Inode, fs.FileHandle, uint64, uint64, uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOTSUP
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, ff, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return fh, ff, errno
	}
	ds, ok := fh.(loopDir)
	if !ok {
		return fh, ff, 0
	}
	return &dirHandle{loopDir: ds, t: n.t, ino: ino(n.backing())}, ff, 0
}

// unwrap gives go-fuse's loopback the node type it checks for.
func unwrap(e fs.InodeEmbedder) fs.InodeEmbedder {
	if n, ok := e.(*node); ok {
		return n.LoopbackNode
	}
	return e
}

// file is a loopback file whose writes, truncates, hole punches and
// fsyncs the tracker sees. It serves no passthrough descriptor: the kernel
// would then write to the backing file without asking (FUSE passthrough,
// Linux 6.9), past the tracker.
type file struct {
	*fs.LoopbackFile
	t   *tracker
	fd  int
	ino uint64
}

var (
	_ fs.FileWriter          = (*file)(nil)
	_ fs.FileFsyncer         = (*file)(nil)
	_ fs.FileSetattrer       = (*file)(nil)
	_ fs.FileAllocater       = (*file)(nil)
	_ fs.FilePassthroughFder = (*file)(nil)
)

// PassthroughFd refuses passthrough (see file).
func (f *file) PassthroughFd() (int, bool) { return -1, false }

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	var written uint32
	err := f.t.write(f.fd, f.ino, off, int64(len(data)), func() error {
		n, errno := f.LoopbackFile.Write(ctx, data, off)
		written = n
		if errno != 0 {
			return errno
		}
		return nil
	})
	return written, fs.ToErrno(err)
}

func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	errno := f.LoopbackFile.Fsync(ctx, flags)
	if errno == 0 {
		f.t.fsynced(f.ino)
	}
	return errno
}

func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok {
		err := f.t.truncate(f.fd, "", f.ino, int64(sz), func() error { return syscall.Ftruncate(f.fd, int64(sz)) })
		if err != nil {
			return fs.ToErrno(err)
		}
		in.Valid &^= fuse.FATTR_SIZE
	}
	return f.LoopbackFile.Setattr(ctx, in, out)
}

// fallocate(2) modes that change bytes already there.
const (
	fallocPunchHole = 0x02
	fallocZeroRange = 0x10
)

func (f *file) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	var n int64
	if mode&(fallocPunchHole|fallocZeroRange) != 0 {
		n = int64(size)
	}
	err := f.t.write(f.fd, f.ino, int64(off), n, func() error {
		if errno := f.LoopbackFile.Allocate(ctx, off, size, mode); errno != 0 {
			return errno
		}
		return nil
	})
	return fs.ToErrno(err)
}

// loopDir is what go-fuse's loopback directory handle serves.
type loopDir interface {
	fs.FileReaddirenter
	fs.FileSeekdirer
	fs.FileReleasedirer
	fs.FileFsyncdirer
}

// dirHandle is a loopback directory handle whose fsync the tracker sees.
type dirHandle struct {
	loopDir
	t   *tracker
	ino uint64
}

func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	errno := d.loopDir.Fsyncdir(ctx, flags)
	if errno == 0 && d.ino != 0 {
		d.t.dirSynced(d.ino)
	}
	return errno
}
