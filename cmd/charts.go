package cmd

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/rmqtorture/rmqtorture/reports"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// writeCharts writes each mode's SVG chart (reports.SVG) into dir, named as
// report.md links it (reports.ChartFile: timeline-N-MODE.svg), each
// atomically; modes without a series have none. It returns the first error,
// naming the file.
func writeCharts(dir string, res *scenario.Result) error {
	for i, m := range res.Modes {
		if m.Series == nil {
			continue
		}
		if err := writeAtomic(filepath.Join(dir, reports.ChartFile(i, m)), func(f *os.File) error { return reports.SVG(f, m) }); err != nil {
			return fmt.Errorf("write %s: %w", reports.ChartFile(i, m), err)
		}
	}
	return nil
}
