package cmd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/reports"
)

var errDiskFull = errors.New("no space left on device")

// failAfter passes n bytes on to w (io.Discard when nil), then fails every
// write with errDiskFull, like a disk that fills up.
type failAfter struct {
	w io.Writer
	n int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.w == nil {
		f.w = io.Discard
	}
	if len(p) <= f.n {
		f.n -= len(p)
		return f.w.Write(p)
	}
	k, _ := f.w.Write(p[:f.n])
	f.n = 0
	return k, errDiskFull
}

// TestWriteAtomicRenderFailureLeavesNoReport: when the renderer fails
// half-way (the disk fills up after 1,000 bytes of report.md), writeAtomic
// returns the error, no report.md appears, an earlier report.md is left as
// it was, and no temporary file stays behind.
func TestWriteAtomicRenderFailureLeavesNoReport(t *testing.T) {
	res, err := loadResult(storedResult)
	if err != nil {
		t.Fatal(err)
	}
	render := func(f *os.File) error { return reports.Markdown(&failAfter{w: f, n: 1000}, res) }
	for _, earlier := range []string{"", "earlier report\n"} {
		dir := t.TempDir()
		path := filepath.Join(dir, "report.md")
		if earlier != "" {
			if err := os.WriteFile(path, []byte(earlier), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := writeAtomic(path, render); !errors.Is(err, errDiskFull) {
			t.Fatalf("earlier %q: got error %v, want %v", earlier, err, errDiskFull)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case earlier == "" && len(entries) != 0:
			t.Errorf("left %d files behind, first %s; want none", len(entries), entries[0].Name())
		case earlier != "" && (len(entries) != 1 || readFile(t, path) != earlier):
			t.Errorf("left %d files, report.md %q; want only the earlier report.md", len(entries), readFile(t, path))
		}
	}
}

// TestRunWriteStdoutFailure: when stdout fails, run's writer still writes
// report.md and result.json in full, and returns the stdout error.
func TestRunWriteStdoutFailure(t *testing.T) {
	res, err := loadResult(storedResult)
	if err != nil {
		t.Fatal(err)
	}
	c := &cobra.Command{}
	c.SetOut(&failAfter{n: 10})
	run := filepath.Join(t.TempDir(), "run")
	if err := (&runOpts{}).write(c, slog.New(slog.DiscardHandler), run, res); !errors.Is(err, errDiskFull) {
		t.Fatalf("got error %v, want %v", err, errDiskFull)
	}
	if got, want := readFile(t, filepath.Join(run, "report.md")), readFile(t, storedMD); got != want {
		t.Errorf("report.md: %d bytes, want %d", len(got), len(want))
	}
	if got, want := readFile(t, filepath.Join(run, "result.json")), readFile(t, storedResult); got != want {
		t.Errorf("result.json: %d bytes, want %d", len(got), len(want))
	}
}

// TestPrintFailureExits4: report and compare exit 4 (an operational
// error) when stdout fails, at its first byte or half-way.
func TestPrintFailureExits4(t *testing.T) {
	for _, args := range [][]string{
		{"report", storedResult},
		{"report", storedResult, "--format", "table"},
		{"report", storedResult, "--format", "json"},
		{"compare", baselineFile, baselineFile},
	} {
		for _, n := range []int{0, 500} {
			var stderr bytes.Buffer
			if code := Execute(context.Background(), args, &failAfter{n: n}, &stderr); code != ExitError {
				t.Errorf("%v, stdout failing after %d bytes: exit %d, want %d (stderr %q)", args, n, code, ExitError, stderr.String())
			}
			if want := "rmqtorture: "; !bytes.Contains(stderr.Bytes(), []byte(errDiskFull.Error())) || !bytes.HasPrefix(stderr.Bytes(), []byte(want)) {
				t.Errorf("%v: stderr %q does not give the write error", args, stderr.String())
			}
		}
	}
}
