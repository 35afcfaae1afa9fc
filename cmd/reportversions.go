package cmd

import (
	"fmt"
	"github.com/rmqtorture/rmqtorture/inputfile"
	"github.com/rmqtorture/rmqtorture/redact"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/reports"
)

// versionsFormats maps --format to the versions report's renderer and the
// file --out writes: report renders a versions folder (run --images) as it
// renders a run folder.
var versionsFormats = map[string]struct {
	render func(io.Writer, *reports.Versions) error
	file   string
}{
	"markdown": {reports.VersionsMarkdown, "versions.md"},
	"table":    {reports.VersionsWide, "versions.txt"},
	"json":     {reports.VersionsJSON, "versions.json"},
	"summary":  {reports.VersionsSummary, "versions-summary.txt"},
}

// versionsFile is the versions.json that path names (the file itself, or
// a versions folder holding one and no result.json), and whether it does.
func versionsFile(path string) (string, bool) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		vf := filepath.Join(path, "versions.json")
		if _, err := os.Stat(filepath.Join(path, "result.json")); err == nil {
			return "", false
		}
		if _, err := os.Stat(vf); err == nil {
			return vf, true
		}
		return "", false
	}
	return path, filepath.Base(path) == "versions.json"
}

// reportVersions renders the versions report at path in o.format: checked
// against reports/schemas/versions.v1.schema.json first (a file that does
// not match is bad input, exit 2, naming it).
func (o *reportOpts) reportVersions(c *cobra.Command, path string) error {
	format := versionsFormats[o.format]
	data, err := inputfile.Read(path, "a versions report", inputfile.MaxResultBytes)
	if inputfile.IsRefused(err) {
		return causeErr(CauseBadResult, err)
	} else if err != nil {
		return causeErr(CauseBadResult, fmt.Errorf("read versions report: %w", err))
	}
	vp, err := reports.DecodeVersions(data)
	if err != nil {
		return causeErr(CauseBadResult, fmt.Errorf("%s: not a versions report of this rmqtorture: %w", path, err))
	}
	v := *vp
	redact.Strings(&v) // a stored report anyone may have edited: no password or terminal code printed
	if o.summaryFile != "" {
		if err := appendVersions(o.summaryFile, &v); err != nil {
			return causeErr(CauseWriteFailed, err)
		}
	}
	if o.out == "" {
		if err := format.render(c.OutOrStdout(), &v); err != nil {
			return causeErr(CauseWriteFailed, fmt.Errorf("write the versions report: %w", err))
		}
		return nil
	}
	dest, err := writeOut(o.out, format.file, path, "the versions report", func(w io.Writer) error { return format.render(w, &v) })
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(c.OutOrStdout(), "report: %s\n", dest); err != nil {
		return causeErr(CauseWriteFailed, err)
	}
	return nil
}
