package reports

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

var errDiskFull = errors.New("no space left on device")

// failAfter accepts n bytes, then fails every write with errDiskFull (a
// short write of what still fits first), like a file on a disk that fills up.
type failAfter struct {
	n   int
	got bytes.Buffer
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) <= f.n {
		f.n -= len(p)
		return f.got.Write(p)
	}
	k := f.n
	f.n = 0
	f.got.Write(p[:k])
	return k, errDiskFull
}

// TestRenderersReturnWriteErrors: every renderer, given a writer that fails
// after n bytes of its output, returns that error, whatever n; given room
// for exactly its output, it succeeds and writes the same bytes as to a
// buffer.
func TestRenderersReturnWriteErrors(t *testing.T) {
	real, _ := realFixture(t)
	cmp := Compare(result(confirmMode(), fireMode()), result(confirmMode()), testThresholds)
	renderers := map[string]func(io.Writer) error{
		"Table":           func(w io.Writer) error { return Table(w, fullResult()) },
		"Table matrix":    func(w io.Writer) error { return Table(w, matrixResult()) },
		"Markdown":        func(w io.Writer) error { return Markdown(w, real) },
		"Markdown full":   func(w io.Writer) error { return Markdown(w, fullResult()) },
		"JSON":            func(w io.Writer) error { return JSON(w, real) },
		"SVG":             func(w io.Writer) error { return SVG(w, chartMode()) },
		"Mermaid":         func(w io.Writer) error { return Mermaid(w, chartMode()) },
		"CompareMarkdown": func(w io.Writer) error { return CompareMarkdown(w, cmp, "base.json", "res.json") },
	}
	for name, render := range renderers {
		t.Run(name, func(t *testing.T) {
			var full bytes.Buffer
			if err := render(&full); err != nil {
				t.Fatal(err)
			}
			size := full.Len()
			if size < 200 {
				t.Fatalf("output of %d bytes: too short to test", size)
			}
			// 0: the first write fails; 1 and 100: inside the first buffer;
			// size/2: past the first flush for the long ones; size-1: the
			// very last byte does not fit.
			for _, n := range []int{0, 1, 100, size / 2, size - 1} {
				w := &failAfter{n: n}
				if err := render(w); !errors.Is(err, errDiskFull) {
					t.Errorf("failing after %d of %d bytes: got error %v, want %v", n, size, err, errDiskFull)
				}
				if !bytes.Equal(w.got.Bytes(), full.Bytes()[:w.got.Len()]) {
					t.Errorf("failing after %d bytes: what was written is not a prefix of the output", n)
				}
			}
			w := &failAfter{n: size}
			if err := render(w); err != nil {
				t.Fatalf("room for all %d bytes: %v", size, err)
			}
			if !bytes.Equal(w.got.Bytes(), full.Bytes()) {
				t.Fatalf("room for all %d bytes: wrote %d different bytes", size, w.got.Len())
			}
		})
	}
}
