package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rmqtorture/rmqtorture/inputfile"
	"github.com/rmqtorture/rmqtorture/redact"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/reports"
	"github.com/rmqtorture/rmqtorture/scenario"
)

type reportOpts struct {
	format      string
	output      outputFormat // -o: sets the format (wide: table)
	out         string
	summaryFile string
}

// formats maps --format to its renderer and the file name --out writes.
var formats = map[string]struct {
	render func(io.Writer, *scenario.Result) error
	file   string
}{
	"markdown": {reports.Markdown, "report.md"},
	"table":    {reports.Table, "report.txt"},
	"json":     {reports.JSON, "result.json"},
	"summary":  {reports.Summary, "summary.txt"},
}

// outputFormats maps -o to the --format it stands for.
var outputFormats = map[outputFormat]string{outWide: "table", outJSON: "json", outMarkdown: "markdown"}

func newReport(g *globalOpts) *cobra.Command {
	o := &reportOpts{}
	c := &cobra.Command{
		Use:   "report RESULT.json|VERSIONS-FOLDER",
		Short: "Re-render a stored result.json as markdown, a table or JSON",
		Long: `report reads a result.json written by run (or the run folder holding it),
checks it against the result schema of its schema_version (1 to 3; older
layouts are upgraded) and renders it again:
markdown (as report.md), the terminal tables, or normalised JSON. It prints to
stdout, or with --out DIR writes DIR/report.md and the SVG charts it links
(timeline-N-MODE.svg, drawn again from the result), or report.txt,
result.json or summary.txt for the other formats. A versions folder (or its
versions.json), written by run --images, is rendered the same way: markdown
as versions.md, the wide table, JSON or the summary. -o wide, json or markdown
is --format table, json or markdown; --format summary prints what run prints
by default: the headline and a table that fits 100 columns. It touches no
broker.

A file that is not JSON or does not match the schema is bad input (exit 2);
the error names the file and the JSON path of each problem. --out and
--summary-file are checked first: a folder that cannot be created or written,
or a file that cannot be appended to, is bad input too (exit 2, naming the
flag). A report that still cannot be written (stdout failed, the disk filled
up) is an error (exit 4); --out then leaves no partial file in place.`,
		Example: `  rmqtorture report rmqtorture-results/kill-mid-burst-20261129T201915Z-6b08aa17
  rmqtorture report result.json -o wide
  rmqtorture report result.json --format summary
  rmqtorture report result.json --summary-file "$GITHUB_STEP_SUMMARY" > /dev/null`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr(fmt.Errorf("report takes one file, RESULT.json; got %d", len(args)))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error { return o.run(c, args[0]) },
	}
	fl := c.Flags()
	fl.StringVar(&o.format, "format", "markdown", "output format: markdown, table, json or summary (the headline and a table that fits 100 columns)")
	addOutputFlag(c, &o.output, outWide, outJSON, outMarkdown)
	fl.Lookup("output").Usage = "output format: wide (--format table), json or markdown (default: --format's)"
	fl.StringVar(&o.out, "out", "", "write to this folder (report.md and its SVG charts, report.txt, result.json or summary.txt) instead of stdout")
	fl.StringVar(&o.summaryFile, "summary-file", "", "also append the markdown report to this file, e.g. $GITHUB_STEP_SUMMARY")
	return c
}

func (o *reportOpts) run(c *cobra.Command, path string) error {
	versions, isVersions := versionsFile(path)
	// A run folder stands for its result.json, as in compare and check.
	path = resultFile(path)
	if o.output != outDefault {
		if c.Flags().Changed("format") && o.format != outputFormats[o.output] {
			return usageErr(fmt.Errorf("-o %s and --format %s disagree: give one", o.output, o.format))
		}
		o.format = outputFormats[o.output]
	}
	format, ok := formats[o.format]
	if !ok {
		return usageErr(fmt.Errorf("--format: %q is not a format (markdown, table, json, summary)%s", o.format, scenario.DidYouMean(o.format, []string{"markdown", "table", "json", "summary"})))
	}
	// Outputs are checked before the result is even read.
	if o.out != "" {
		if err := checkOutDir("--out", o.out); err != nil {
			return err
		}
	}
	if o.summaryFile != "" {
		if err := checkAppendFile("--summary-file", o.summaryFile); err != nil {
			return err
		}
	}
	if isVersions {
		return o.reportVersions(c, versions)
	}
	res, err := loadResult(path)
	if err != nil {
		return err
	}
	if o.summaryFile != "" {
		if err := appendSummary(o.summaryFile, res); err != nil {
			return causeErr(CauseWriteFailed, err)
		}
	}
	if o.out == "" {
		if err := format.render(c.OutOrStdout(), res); err != nil {
			return causeErr(CauseWriteFailed, fmt.Errorf("write the report: %w", err))
		}
		return nil
	}
	dest, err := writeOut(o.out, format.file, path, "the result", func(w io.Writer) error { return format.render(w, res) })
	if err != nil {
		return err
	}
	if o.format == "markdown" {
		// The charts report.md links, beside it.
		if err := writeCharts(o.out, res); err != nil {
			return causeErr(CauseWriteFailed, err)
		}
	}
	if _, err := fmt.Fprintf(c.OutOrStdout(), "report: %s\n", dest); err != nil {
		return causeErr(CauseWriteFailed, err)
	}
	return nil
}

// writeOut writes what render writes to dir/file atomically (creating
// dir) and returns its path: the --out of report. Overwriting read, the
// file being rendered (what it is), is bad input.
func writeOut(dir, file, read, what string, render func(io.Writer) error) (string, error) {
	dest := filepath.Join(dir, file)
	if same(dest, read) {
		return "", usageErr(fmt.Errorf("--out %s would overwrite %s being read, %s", dir, what, read))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", causeErr(CauseWriteFailed, fmt.Errorf("create report folder: %w", err))
	}
	if err := writeAtomic(dest, func(f *os.File) error { return render(f) }); err != nil {
		return "", causeErr(CauseWriteFailed, fmt.Errorf("write %s: %w", dest, err))
	}
	return dest, nil
}

// loadResult reads, schema-validates (reports.Decode) and decodes the
// result.json at path: the one loader of report, compare and check. A
// missing, unreadable, truncated or invalid file, or another schema_version,
// is bad input (exit 2), and the error names the file.
func loadResult(path string) (*scenario.Result, error) {
	data, err := inputfile.Read(path, "a result.json", inputfile.MaxResultBytes)
	if inputfile.IsRefused(err) {
		return nil, causeErr(CauseBadResult, err)
	} else if err != nil {
		return nil, causeErr(CauseBadResult, fmt.Errorf("read result: %w", err))
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, causeErr(CauseBadResult, fmt.Errorf("%s: empty file, not a result.json", path))
	}
	var v struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if json.Unmarshal(data, &v) == nil && v.SchemaVersion != nil && (*v.SchemaVersion < reports.OldestSchemaVersion || *v.SchemaVersion > scenario.SchemaVersion) {
		return nil, causeErr(CauseBadResult, fmt.Errorf("%s: schema_version %d, this rmqtorture reads schema_version %d to %d", path, *v.SchemaVersion, reports.OldestSchemaVersion, scenario.SchemaVersion))
	}
	res, err := reports.Decode(data)
	var invalid *reports.InvalidResultError
	switch {
	case errors.As(err, &invalid):
		return nil, causeErr(CauseBadResult, fmt.Errorf("%s: %w", path, err))
	case err != nil:
		return nil, opErr(fmt.Errorf("%s: %w", path, err))
	}
	// A result is a file anyone may have edited: no password (a --uri in
	// its command) or terminal code (in a reason) is printed from it.
	redact.Strings(res)
	return res, nil
}

// same reports whether two paths name the same existing file.
func same(a, b string) bool {
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ia, ib)
}

// appendSummary appends the markdown report of res to path (created if
// missing), for CI job summaries such as $GITHUB_STEP_SUMMARY.
func appendSummary(path string, res *scenario.Result) error {
	return appendMarkdown(path, func(w io.Writer) error { return reports.Markdown(w, res) })
}

// appendMarkdown appends what render writes to path (created if missing).
// It is rendered first and written in one call, so a failed rendering
// appends nothing; a blank line separates it from what follows.
func appendMarkdown(path string, render func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return fmt.Errorf("render summary: %w", err)
	}
	buf.WriteString("\n")
	f, err := openAppend(path)
	if err != nil {
		return fmt.Errorf("append summary to %s: %w", path, err)
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("append summary to %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("append summary to %s: %w", path, err)
	}
	return nil
}
