package cmd

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
)

const (
	storedResult = "../reports/testdata/kill-mid-burst.result.json"
	storedMD     = "../reports/testdata/kill-mid-burst.md.golden"
	storedTable  = "../reports/testdata/kill-mid-burst.table.golden"
	// storedSummary is run's default output: the headline and a table
	// that fits 100 columns.
	storedSummary = "../reports/testdata/kill-mid-burst.summary.golden"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReportFormats: report renders a stored result exactly as the reports
// package's golden files pin it, and --format json gives the file back.
func TestReportFormats(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, readFile(t, storedMD)},
		{[]string{"--format", "markdown"}, readFile(t, storedMD)},
		{[]string{"--format", "table"}, readFile(t, storedTable)},
		{[]string{"--format", "json"}, readFile(t, storedResult)},
		{[]string{"--format", "summary"}, readFile(t, storedSummary)},
		{[]string{"-o", "wide"}, readFile(t, storedTable)},
		{[]string{"-o", "json"}, readFile(t, storedResult)},
		{[]string{"--output", "markdown", "--format", "markdown"}, readFile(t, storedMD)},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"report", storedResult}, tc.args...)...)
		if code != ExitPass || stderr != "" {
			t.Fatalf("%v: exit %d, stderr %q", tc.args, code, stderr)
		}
		if stdout != tc.want {
			t.Errorf("%v: stdout differs from the golden rendering (%d bytes, want %d)", tc.args, len(stdout), len(tc.want))
		}
	}
	// A run folder stands for the result.json in it, as in compare and check.
	run := t.TempDir()
	if err := os.WriteFile(filepath.Join(run, "result.json"), []byte(readFile(t, storedResult)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "report", run, "--format", "summary")
	if code != ExitPass || stderr != "" || stdout != readFile(t, storedSummary) {
		t.Errorf("report RUN_DIR: exit %d, stderr %q, stdout\n%s\nwant the stored summary", code, stderr, stdout)
	}
}

func TestReportOutAndSummary(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	summary := filepath.Join(dir, "summary.md")
	if err := os.WriteFile(summary, []byte("earlier step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "report", storedResult, "--out", out, "--summary-file", summary)
	if code != ExitPass {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	report := filepath.Join(out, "report.md")
	if want := "report: " + report + "\n"; stdout != want {
		t.Fatalf("stdout %q, want %q", stdout, want)
	}
	md := readFile(t, storedMD)
	if got := readFile(t, report); got != md {
		t.Fatalf("%s differs from %s", report, storedMD)
	}
	if fi, err := os.Stat(report); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("report.md mode %v (%v), want 0644", fi.Mode(), err)
	}
	// A second report appends after the first, a blank line between.
	if code, _, stderr := runCLI(t, "report", storedResult, "--summary-file", summary); code != ExitPass {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got, want := readFile(t, summary), "earlier step\n"+md+"\n"+md+"\n"; got != want {
		t.Fatalf("summary file has %d bytes, want %d", len(got), len(want))
	}
}

// TestReportBadInput: every bad input exits 2 with one line naming the file
// and, for a schema mismatch, the JSON path.
func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(readFile(t, storedResult)), &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc["modes"].([]any)[1].(map[string]any), "lost")
	doc["duration_ms"] = "long"
	broken, _ := json.Marshal(doc)
	missingField := write("missing.json", string(broken))
	notJSON := write("truncated.json", "{\n  \"schema_version\": 1,\n  \"modes\": [\n")
	missing := filepath.Join(dir, "nope.json")
	self := write("result.json", readFile(t, storedResult))

	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"report", missingField}, "rmqtorture: " + missingField + ": does not match the schema of schema_version 3 (reports/result.schema.json): /duration_ms: got string, want number; /modes/1: missing property 'lost'\n"},
		{[]string{"report", notJSON}, "rmqtorture: " + notJSON + ": not JSON: line 4, column 1: unexpected EOF\n"},
		{[]string{"report", missing}, "rmqtorture: read result: open " + missing + ": no such file or directory\n"},
		{[]string{"report", storedResult, "--format", "html"}, "rmqtorture: --format: \"html\" is not a format (markdown, table, json, summary)\n"},
		{[]string{"report", self, "--format", "json", "--out", dir}, "rmqtorture: --out " + dir + " would overwrite the result being read, " + self + "\n"},
		{[]string{"report"}, "rmqtorture: report takes one file, RESULT.json; got 0\n"},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != ExitUsage || stdout != "" || stderr != tc.stderr {
			t.Errorf("%v: exit %d, stdout %q, stderr\n %q\nwant exit 2, stderr\n %q", tc.args, code, stdout, stderr, tc.stderr)
		}
	}
}

// TestRunWriteSummaryFile: run's writer puts report.md and result.json
// (readable by all) in the run folder and appends the same markdown to
// --summary-file.
func TestRunWriteSummaryFile(t *testing.T) {
	res, err := loadResult(storedResult)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o := &runOpts{summaryFile: filepath.Join(dir, "summary.md")}
	c := &cobra.Command{}
	var stdout bytes.Buffer
	c.SetOut(&stdout)
	run := filepath.Join(dir, "run")
	if err := o.write(c, slog.New(slog.DiscardHandler), run, res); err != nil {
		t.Fatal(err)
	}
	md := readFile(t, storedMD)
	for path, want := range map[string]string{
		filepath.Join(run, "report.md"):   md,
		filepath.Join(run, "result.json"): readFile(t, storedResult),
		o.summaryFile:                     md + "\n",
	} {
		if got := readFile(t, path); got != want {
			t.Errorf("%s: %d bytes, want %d", path, len(got), len(want))
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v (%v), want 0644", path, fi.Mode(), err)
		}
	}
	if want := readFile(t, storedSummary) + "(every column: rmqtorture report RESULT.json -o wide, or run with -o wide)\nreport: " + filepath.Join(run, "report.md") + "\nresult: " + filepath.Join(run, "result.json") + "\n"; stdout.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), want)
	}
}

// TestRunWriteOutput: run -o wide prints every column, -o json the
// result.json and -o markdown the report.md it writes; with json and
// markdown, stdout holds the document alone and the paths go to stderr.
func TestRunWriteOutput(t *testing.T) {
	for _, tc := range []struct {
		output      outputFormat
		want        string
		pathsStdout bool
	}{
		{outWide, storedTable, true},
		{outJSON, storedResult, false},
		{outMarkdown, storedMD, false},
	} {
		res, err := loadResult(storedResult)
		if err != nil {
			t.Fatal(err)
		}
		o := &runOpts{output: tc.output}
		c := &cobra.Command{}
		var stdout, stderr bytes.Buffer
		c.SetOut(&stdout)
		c.SetErr(&stderr)
		run := filepath.Join(t.TempDir(), "run")
		if err := o.write(c, slog.New(slog.DiscardHandler), run, res); err != nil {
			t.Fatal(err)
		}
		paths := "report: " + filepath.Join(run, "report.md") + "\nresult: " + filepath.Join(run, "result.json") + "\n"
		wantOut, wantErr := readFile(t, tc.want)+paths, ""
		if !tc.pathsStdout {
			// stdout holds the document alone: the verdict goes to stderr.
			wantOut, wantErr = readFile(t, tc.want), "verdict: kill-mid-burst: PASS\n"+paths
		}
		if stdout.String() != wantOut || stderr.String() != wantErr {
			t.Errorf("-o %s: stdout %d bytes, stderr %q; want %d bytes, stderr %q", tc.output, stdout.Len(), stderr.String(), len(wantOut), wantErr)
		}
	}
}
