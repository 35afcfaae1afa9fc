package cmd

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A named pipe takes the summary when something reads it (mkfifo p; cat p &
// rmqtorture report r.json --summary-file p), and is refused at once when
// nothing does, instead of holding the command for ever.
func TestCheckAppendFileNamedPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "summary.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	err := checkAppendFile("--summary-file", fifo)
	want := "--summary-file " + fifo + ": cannot append there: a named pipe with no reader (writing would wait for one for ever)"
	if err == nil || err.Error() != want {
		t.Fatalf("no reader: %v, want %q", err, want)
	}
	reader, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if err := checkAppendFile("--summary-file", fifo); err != nil {
		t.Fatalf("with a reader: %v", err)
	}
	if err := appendFile(fifo, []byte("## summary\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := reader.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), "## summary") {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
}

// A reader such as `cat p` ends at its first end of file: the check must
// not give it one, and two summaries appended (two scenarios) reach it as
// one stream.
func TestSummaryPipeReaderLikeCat(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "summary.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	reader, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkAppendFile("--summary-file", fifo); err != nil {
		t.Fatal(err)
	}
	// From here on the reader reads as cat does, until its first end of
	// file: a pipe without a writer gives one at once (pipe(7)), so the
	// end the check opened must still be open. (Reading before the check
	// would see that end of file too: the check is what must not cause it.)
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(reader)
		reader.Close()
		got <- string(b)
	}()
	time.Sleep(50 * time.Millisecond) // a reader that saw end of file now would be gone
	for _, md := range []string{"## one", "## two"} {
		if err := appendFile(fifo, []byte(md)); err != nil {
			t.Fatalf("append %s: %v", md, err)
		}
	}
	heldMu.Lock()
	heldPipes[fifo].Close()
	delete(heldPipes, fifo)
	heldMu.Unlock()
	select {
	case s := <-got:
		if s != "\n## one\n## two" {
			t.Fatalf("reader got %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reader never saw the end")
	}
}
