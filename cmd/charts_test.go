package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/rmqtorture/rmqtorture/reports"
)

// seriesResult is a stored run with a series per mode (three modes).
const seriesResult = "../reports/testdata/kill-mid-burst-series.result.json"

// TestReportOutCharts: report --out regenerates the SVG charts report.md
// links, beside it, exactly as reports.SVG draws them from the result;
// another format writes no chart.
func TestReportOutCharts(t *testing.T) {
	res, err := loadResult(seriesResult)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := runCLI(t, "report", seriesResult, "--out", out); code != ExitPass {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	md := readFile(t, filepath.Join(out, "report.md"))
	var linked []string
	for _, m := range regexp.MustCompile(`\]\((timeline-[^)]+\.svg)\)`).FindAllStringSubmatch(md, -1) {
		if !slices.Contains(linked, m[1]) {
			linked = append(linked, m[1])
		}
	}
	want := []string{"timeline-1-fire-and-forget.svg", "timeline-2-confirm-each.svg", "timeline-3-confirm-window.svg"}
	if !slices.Equal(linked, want) {
		t.Fatalf("report.md links %v, want %v", linked, want)
	}
	for i, m := range res.Modes {
		var svg bytes.Buffer
		if err := reports.SVG(&svg, m); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(out, reports.ChartFile(i, m))
		if got := readFile(t, path); got != svg.String() {
			t.Errorf("%s: %d bytes, want the %d bytes reports.SVG draws", path, len(got), svg.Len())
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v (%v), want 0644", path, fi.Mode(), err)
		}
	}
	entries, err := os.ReadDir(out)
	if err != nil || len(entries) != 4 {
		t.Errorf("%s holds %d entries (%v), want report.md and 3 charts", out, len(entries), err)
	}

	tableOut := filepath.Join(t.TempDir(), "table")
	if code, _, stderr := runCLI(t, "report", seriesResult, "--format", "table", "--out", tableOut); code != ExitPass {
		t.Fatalf("table: exit %d: %s", code, stderr)
	}
	if entries, err := os.ReadDir(tableOut); err != nil || len(entries) != 1 || entries[0].Name() != "report.txt" {
		t.Errorf("--format table --out wrote %v (%v), want report.txt alone", entries, err)
	}
}
