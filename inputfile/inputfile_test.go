package inputfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "ok.yaml")
	if err := os.WriteFile(regular, []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, 2049), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "p.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "z.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}

	if data, err := Read(regular, "a scenario file", 1024); err != nil || string(data) != "version: 1\n" {
		t.Fatalf("regular file: %q, %v", data, err)
	}
	for path, want := range map[string]string{
		fifo: fifo + ": a named pipe, not a regular file: rmqtorture reads only regular files",
		zero: zero + ": a character device, not a regular file: rmqtorture reads only regular files",
		dir:  dir + ": a directory, not a regular file: rmqtorture reads only regular files",
		big:  big + ": 2049 bytes, more than the 2048 (2 KiB) a result.json may have; refusing to read it",
	} {
		_, err := Read(path, "a result.json", 2048)
		if err == nil || err.Error() != want || !IsRefused(err) {
			t.Errorf("Read(%s) = %v, want %q", filepath.Base(path), err, want)
		}
	}
	_, err := Read(filepath.Join(dir, "missing"), "a result.json", 2048)
	if !errors.Is(err, fs.ErrNotExist) || IsRefused(err) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Check(big, "a result.json", 16<<20); err != nil {
		t.Errorf("Check with room: %v", err)
	}
	if _, err := Check(big, "a result.json", 1024); err == nil || !strings.Contains(err.Error(), "(1 KiB)") {
		t.Errorf("Check: %v", err)
	}
	if f, err := Open(fifo, "a history", 0); err == nil {
		f.Close()
		t.Error("Open of a named pipe succeeded")
	}
}
