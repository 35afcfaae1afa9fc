//go:build linux

package lazyfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
)

// tracker holds what a power cut would take away: per file (by the backing
// file's inode number) the size it had when it was last synced and the
// bytes overwritten since, and the entries created since the last fsync
// of anything.
//
// The model, stated once (docs/power-loss.md):
//   - File data written since the file's last fsync or fdatasync is lost:
//     its size goes back to what it was then, and every byte overwritten
//     since gets its old value back (a truncate and a hole punch count as
//     writes).
//   - An entry (file, directory, symlink, device, hard link) created since
//     the last fsync of any file or directory of the filesystem is lost.
//     ext4 and XFS keep their metadata in one journal for the whole
//     filesystem, and an fsync commits it: every creation made before an
//     fsync, anywhere, is durable after it. (RabbitMQ's logs fsync the
//     files they write, never the directories they make.)
//   - A rename or a removal takes effect at once, as if its directory were
//     synced: a file the broker removed does not come back.
type tracker struct {
	mu      sync.Mutex
	root    string              // the backing directory
	files   map[uint64]*dirty   // by backing inode
	created map[uint64]struct{} // inodes of the entries created since the last fsync
	synced  map[uint64]struct{} // inodes fsynced since the last cut (counted, for the report)
}

// dirty is one file's writes since its last sync.
type dirty struct {
	size    int64  // at the last sync
	undo    []span // bytes within [0, size) as they were before each overwrite, oldest first
	written int64  // bytes written (or cut off by a truncate) since the last sync
}

// span is a run of bytes at an offset.
type span struct {
	off  int64
	data []byte
}

func newTracker(root string) *tracker {
	return &tracker{root: root, files: map[uint64]*dirty{}, created: map[uint64]struct{}{}, synced: map[uint64]struct{}{}}
}

// state returns ino's record, starting one from the file's size now when
// it has none (its last sync is now as far as the tracker knows).
func (t *tracker) state(ino uint64, size func() (int64, error)) (*dirty, error) {
	if d, ok := t.files[ino]; ok {
		return d, nil
	}
	n, err := size()
	if err != nil {
		return nil, err
	}
	d := &dirty{size: n}
	t.files[ino] = d
	return d, nil
}

// save keeps the bytes of [off, off+n) that lie within the synced size, as
// the file holds them now, before an operation changes them.
func (d *dirty) save(fd int, off, n int64) error {
	end := min(off+n, d.size)
	if off >= end {
		return nil
	}
	buf := make([]byte, end-off)
	got, err := syscall.Pread(fd, buf, off)
	if err != nil {
		return fmt.Errorf("read %d bytes at %d before overwriting them: %w", len(buf), off, err)
	}
	if got > 0 {
		d.undo = append(d.undo, span{off: off, data: buf[:got]})
	}
	return nil
}

// write records a write of n bytes at off through fd (the file's inode
// ino) and then makes it with do, under the tracker's lock, so that no
// other write slips between the saved bytes and the write.
func (t *tracker) write(fd int, ino uint64, off, n int64, do func() error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	d, err := t.state(ino, fdSize(fd))
	if err != nil {
		return err
	}
	if err := d.save(fd, off, n); err != nil {
		return err
	}
	if err := do(); err != nil {
		return err
	}
	d.written += n
	return nil
}

// truncate records a change of ino's size to size through fd (which may
// be -1: then path is opened) and makes it with do.
func (t *tracker) truncate(fd int, path string, ino uint64, size int64, do func() error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if fd < 0 {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		fd = int(f.Fd())
	}
	cur, err := fdSize(fd)()
	if err != nil {
		return err
	}
	d, err := t.state(ino, func() (int64, error) { return cur, nil })
	if err != nil {
		return err
	}
	if size < cur {
		if err := d.save(fd, size, cur-size); err != nil {
			return err
		}
		d.written += cur - size
	}
	return do()
}

// fsynced forgets ino's writes (they are durable now) and makes every
// entry created so far durable (the journal commit).
func (t *tracker) fsynced(ino uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.files, ino)
	clear(t.created)
	t.synced[ino] = struct{}{}
}

// dirSynced makes every entry created so far durable (the journal
// commit); a directory has no data of its own to sync.
func (t *tracker) dirSynced(dir uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.created)
	t.synced[dir] = struct{}{}
}

// writeBack makes every write and creation so far durable.
func (t *tracker) writeBack() {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.files)
	clear(t.created)
}

// create records a new entry ino: wherever it is moved, the cut finds it
// by its inode.
func (t *tracker) create(ino uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.created[ino] = struct{}{}
}

// removed forgets ino once its last link is gone: its writes cannot be
// undone, and the number may be reused for a new file.
func (t *tracker) removed(ino uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.files, ino)
	delete(t.created, ino)
}

// cut undoes every unsynced write and creation in the backing directory
// and reports what it took. Nothing may use the mount meanwhile (the
// broker's containers are killed first).
func (t *tracker) cut() (Dropped, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	paths := map[uint64]string{}
	err := filepath.WalkDir(t.root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			if _, seen := paths[st.Ino]; !seen {
				paths[st.Ino] = p
			}
		}
		return nil
	})
	if err != nil {
		return Dropped{}, fmt.Errorf("power cut: list %s: %w", t.root, err)
	}
	var drop Dropped
	var errs []error
	for ino, d := range t.files {
		p, ok := paths[ino]
		if !ok {
			continue
		}
		if err := d.restore(p); err != nil {
			errs = append(errs, err)
			continue
		}
		drop.Files++
		drop.Bytes += d.written
	}
	// Deepest first, so that an entry inside a created directory counts
	// before the directory takes it with it.
	var gone []string
	for ino := range t.created {
		if p, ok := paths[ino]; ok && p != t.root {
			gone = append(gone, p)
		}
	}
	slices.SortFunc(gone, func(a, b string) int { return len(b) - len(a) })
	for _, p := range gone {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("power cut: remove %s: %w", p, err))
			continue
		}
		drop.Entries++
	}
	drop.Synced = len(t.synced)
	t.files, t.created, t.synced = map[uint64]*dirty{}, map[uint64]struct{}{}, map[uint64]struct{}{}
	return drop, errors.Join(errs...)
}

// restore puts the file at p back as it was at its last sync.
func (d *dirty) restore(p string) error {
	f, err := os.OpenFile(p, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("power cut: open %s: %w", p, err)
	}
	defer f.Close()
	for i := len(d.undo) - 1; i >= 0; i-- {
		if _, err := f.WriteAt(d.undo[i].data, d.undo[i].off); err != nil {
			return fmt.Errorf("power cut: restore %s: %w", p, err)
		}
	}
	if err := f.Truncate(d.size); err != nil {
		return fmt.Errorf("power cut: truncate %s to %d bytes: %w", p, d.size, err)
	}
	return nil
}

// fdSize returns a function reading fd's size now.
func fdSize(fd int) func() (int64, error) {
	return func() (int64, error) {
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return 0, err
		}
		return st.Size, nil
	}
}
