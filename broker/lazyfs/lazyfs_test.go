//go:build linux

package lazyfs

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
)

// mount mounts a lazyfs of a fresh backing directory on a fresh
// mountpoint, unmounted when the test ends. These tests use a real FUSE
// mount: they skip, saying why, where there is no /dev/fuse or no root.
func mount(t *testing.T) (*FS, string) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no /dev/fuse: %v", err)
	}
	if os.Getuid() != 0 {
		t.Skip("mounting a lazyfs needs root")
	}
	dir := t.TempDir()
	backing, mnt := filepath.Join(dir, "data"), filepath.Join(dir, "mnt")
	for _, d := range []string{backing, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Mount(backing, mnt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return f, mnt
}

// write opens name under dir with flags, writes data at off, and syncs the
// file when sync is set.
func write(t *testing.T, name string, flags int, off int64, data string, sync bool) {
	t.Helper()
	f, err := os.OpenFile(name, flags, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte(data), off); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

func content(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func gone(t *testing.T, name string) {
	t.Helper()
	if _, err := os.Lstat(name); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after the cut: %v, want it gone", filepath.Base(name), err)
	}
}

func cut(t *testing.T, f *FS, want Dropped) {
	t.Helper()
	got, err := f.Cut()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Cut() = %+v, want %+v", got, want)
	}
}

func TestCutDropsUnsyncedData(t *testing.T) {
	f, mnt := mount(t)
	wal := filepath.Join(mnt, "wal")
	write(t, wal, os.O_CREATE|os.O_WRONLY, 0, "synced--", true) // the file is fsynced: its creation too
	syncDir(t, mnt)
	write(t, wal, os.O_WRONLY, 8, "appended", false)
	write(t, wal, os.O_WRONLY, 0, "XX", false) // an overwrite of synced bytes
	if got := content(t, wal); got != "XXnced--appended" {
		t.Fatalf("before the cut %q", got)
	}
	// 10 bytes written; fsynced: the file and the directory.
	cut(t, f, Dropped{Files: 1, Bytes: 10, Synced: 2})
	if got := content(t, wal); got != "synced--" {
		t.Errorf("after the cut %q, want %q", got, "synced--")
	}
	// The next cut finds nothing to drop.
	cut(t, f, Dropped{})
	if got := content(t, filepath.Join(f.Backing, "wal")); got != "synced--" {
		t.Errorf("backing file %q", got)
	}
}

func TestCutUndoesTruncateAndOTrunc(t *testing.T) {
	f, mnt := mount(t)
	seg := filepath.Join(mnt, "segment")
	write(t, seg, os.O_CREATE|os.O_WRONLY, 0, "0123456789", true)
	if err := os.Truncate(seg, 4); err != nil { // truncate(2): no open file
		t.Fatal(err)
	}
	write(t, seg, os.O_WRONLY|os.O_TRUNC, 0, "new", false) // open(O_TRUNC), then a write
	if got := content(t, seg); got != "new" {
		t.Fatalf("before the cut %q", got)
	}
	// Cut off 6, then 4; written 3.
	cut(t, f, Dropped{Files: 1, Bytes: 13, Synced: 1})
	if got := content(t, seg); got != "0123456789" {
		t.Errorf("after the cut %q, want the synced 0123456789", got)
	}
}

func TestCutRemovesUnsyncedEntries(t *testing.T) {
	f, mnt := mount(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Any fsync commits every creation before it: olddir, by the fsync of
	// kept, which keeps its data.
	must(os.Mkdir(filepath.Join(mnt, "olddir"), 0o755))
	write(t, filepath.Join(mnt, "kept"), os.O_CREATE|os.O_WRONLY, 0, "kept", true)
	// Synced, then removed: a removal is not undone.
	write(t, filepath.Join(mnt, "removed"), os.O_CREATE|os.O_WRONLY, 0, "r", true)
	must(os.Remove(filepath.Join(mnt, "removed")))
	// Created, its data never synced, its entry committed by the fsync of
	// its directory: the entry stays, empty.
	write(t, filepath.Join(mnt, "olddir", "empty"), os.O_CREATE|os.O_WRONLY, 0, "zz", false)
	syncDir(t, filepath.Join(mnt, "olddir"))
	// Nothing is synced after this: a file, a directory with a file in it,
	// and a file moved into olddir are all gone.
	write(t, filepath.Join(mnt, "lost"), os.O_CREATE|os.O_WRONLY, 0, "x", false)
	must(os.Mkdir(filepath.Join(mnt, "newdir"), 0o755))
	write(t, filepath.Join(mnt, "newdir", "inner"), os.O_CREATE|os.O_WRONLY, 0, "y", false)
	write(t, filepath.Join(mnt, "moved"), os.O_CREATE|os.O_WRONLY, 0, "m", false)
	must(os.Rename(filepath.Join(mnt, "moved"), filepath.Join(mnt, "olddir", "moved")))

	// Data lost in empty, lost, inner and moved (5 bytes); entries lost:
	// lost, newdir, inner, moved. Synced: kept, removed, olddir.
	cut(t, f, Dropped{Files: 4, Bytes: 5, Entries: 4, Synced: 3})
	gone(t, filepath.Join(mnt, "lost"))
	gone(t, filepath.Join(mnt, "newdir"))
	gone(t, filepath.Join(mnt, "olddir", "moved"))
	gone(t, filepath.Join(mnt, "removed"))
	if got := content(t, filepath.Join(mnt, "kept")); got != "kept" {
		t.Errorf("kept %q", got)
	}
	if got := content(t, filepath.Join(mnt, "olddir", "empty")); got != "" {
		t.Errorf("olddir/empty %q, want it empty", got)
	}
}

// The broker's own user reads and writes as on a plain filesystem: what it
// creates is its own, and the kernel checks modes for it.
func TestOwnershipAndPermissions(t *testing.T) {
	f, mnt := mount(t)
	const uid = 4242
	if err := os.Chown(f.Backing, uid, uid); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(mnt, "private"), 0o700); err != nil { // root's
		t.Fatal(err)
	}
	as := func(script string) error {
		cmd := exec.Command("setpriv", "--reuid="+strconv.Itoa(uid), "--regid="+strconv.Itoa(uid), "--clear-groups", "sh", "-c", script)
		cmd.Dir = mnt
		out, err := cmd.CombinedOutput()
		if err != nil {
			return errors.New(string(out))
		}
		return nil
	}
	if err := as("echo hello > mine && chmod 600 mine"); err != nil {
		t.Fatalf("the directory's owner cannot write in it: %v", err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(f.Backing, "mine"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != uid || st.Gid != uid || st.Mode&0o777 != 0o600 {
		t.Errorf("mine: uid %d gid %d mode %o, want %d %d 600", st.Uid, st.Gid, st.Mode&0o777, uid, uid)
	}
	if err := as("echo no > private/x"); err == nil {
		t.Error("uid 4242 wrote into root's 0700 directory")
	}
}

func TestMountsListsAndUnmounts(t *testing.T) {
	f, mnt := mount(t)
	got, err := Mounts()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, mnt) {
		t.Fatalf("Mounts() = %q, want it to hold %s", got, mnt)
	}
	if err := f.Unmount(); err != nil {
		t.Fatal(err)
	}
	got, _ = Mounts()
	if slices.Contains(got, mnt) {
		t.Errorf("still mounted after Unmount: %q", got)
	}
}
