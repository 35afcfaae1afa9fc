package cmd

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
)

// TestRunJSONSeveralScenarios: run -o json with several scenarios prints
// one JSON document, an array of their result.json objects in run order;
// one scenario prints the object alone (what result.json holds); an array
// no result reached prints nothing.
func TestRunJSONSeveralScenarios(t *testing.T) {
	want := readFile(t, storedResult)
	for _, n := range []int{0, 1, 2, 3} {
		o := &runOpts{output: outJSON}
		o.json.on = n > 1
		c := &cobra.Command{}
		var stdout, stderr bytes.Buffer
		c.SetOut(&stdout)
		c.SetErr(&stderr)
		for i := range n {
			res, err := loadResult(storedResult)
			if err != nil {
				t.Fatal(err)
			}
			if err := o.write(c, slog.New(slog.DiscardHandler), filepath.Join(t.TempDir(), "run"), res); err != nil {
				t.Fatalf("scenario %d: %v", i, err)
			}
		}
		// A second Ctrl-C's partial report closes the array, and run's
		// return then finds it closed.
		for range 2 {
			if err := o.endJSONArray(c.OutOrStdout()); err != nil {
				t.Fatal(err)
			}
		}
		switch n {
		case 0:
			if stdout.Len() != 0 {
				t.Errorf("no result: stdout %q, want nothing", stdout.String())
			}
		case 1:
			if stdout.String() != want {
				t.Errorf("one scenario: stdout %d bytes, want result.json's %d", stdout.Len(), len(want))
			}
		default:
			var docs []json.RawMessage
			dec := json.NewDecoder(&stdout)
			if err := dec.Decode(&docs); err != nil {
				t.Fatalf("%d scenarios: stdout is not one JSON array: %v", n, err)
			}
			if dec.More() {
				t.Errorf("%d scenarios: more after the array", n)
			}
			if len(docs) != n {
				t.Errorf("%d scenarios: %d elements", n, len(docs))
			}
			var compact, wantCompact bytes.Buffer
			_ = json.Compact(&wantCompact, []byte(want))
			for i, d := range docs {
				compact.Reset()
				_ = json.Compact(&compact, d)
				if compact.String() != wantCompact.String() {
					t.Errorf("%d scenarios: element %d is not the result.json", n, i)
				}
			}
		}
	}
}

// TestRunSeveralScenariosSeparated: with the default output, -o wide and
// -o markdown, each further scenario's result starts after a blank line,
// so the second headline does not run on from the first's report paths.
func TestRunSeveralScenariosSeparated(t *testing.T) {
	for _, output := range []outputFormat{outDefault, outWide, outMarkdown} {
		o := &runOpts{output: output}
		c := &cobra.Command{}
		var one, two bytes.Buffer
		c.SetErr(&bytes.Buffer{})
		for _, w := range []*bytes.Buffer{&one, &two} {
			res, err := loadResult(storedResult)
			if err != nil {
				t.Fatal(err)
			}
			c.SetOut(w)
			if err := o.write(c, slog.New(slog.DiscardHandler), filepath.Join(t.TempDir(), "run"), res); err != nil {
				t.Fatal(err)
			}
		}
		first, _, _ := bytes.Cut(one.Bytes(), []byte("\n"))
		if bytes.HasPrefix(one.Bytes(), []byte("\n")) || !bytes.HasPrefix(two.Bytes(), append([]byte("\n"), first...)) {
			t.Errorf("-o %q: first result starts %q, second %q; want the second after one blank line", output, one.String()[:20], two.String()[:20])
		}
	}
}
