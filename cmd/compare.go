package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/reports"
)

type compareOpts struct {
	th           reports.Thresholds
	recoveryMS   float64
	recoveryRise float64
	summaryFile  string
	output       outputFormat
}

func newCompare() *cobra.Command {
	o := &compareOpts{th: reports.DefaultThresholds()}
	c := &cobra.Command{
		Use:   "compare BASELINE RESULT",
		Short: "Compare a result.json with a baseline of the same scenario; exit 1 on a regression",
		Long: `compare reads two result.json files of the same scenario and checks the result
against the baseline mode by mode (and matrix cell by cell, matched by mode and
cell). Each argument is a result.json or a run folder holding one. Both files
are checked against the schema of their schema_version first (1 to 3; older
layouts are upgraded, and what they did not record is not compared).

  - lost confirmed messages (lost > 0 where lost_allowed is false): always a regression
  - a mode whose own verdict is not pass, or missing from the result: always a regression
  - fire-and-forget's missing share (unconfirmed_missing ÷ sent, published and
    never delivered): may rise at most --max-missing-rise percentage points
  - publish msg/s before the fault (pre_fault_publish_rate_msgs_per_s), and
    confirm msg/s (confirm_rate_msgs_per_s) for confirm modes: may drop at most
    --max-throughput-drop percent
  - confirm latency p99 (confirm_latency_ms.p99): may rise at most --max-p99-rise percent
  - client recovery (client_recovery_ms): held to --max-recovery-ms and
    --max-recovery-rise when given

A value exactly at its limit passes. It prints a markdown table per mode
(metric, baseline, result, change, limit, ok or REGRESSION) on stdout, or with
-o json the same as one JSON object (figures as numbers); --summary-file
appends the markdown to that file (e.g. $GITHUB_STEP_SUMMARY).
Thresholds come from flags only; the scenario's expect block is not read.

Exit codes: 0 no regression, 1 regression, 2 bad input (a file unreadable,
not JSON or not matching its schema, naming the file and the field; different
scenarios; a schema_version this rmqtorture does not read; bad flags; a
--summary-file that cannot be appended to: checked first), 4 the comparison
could not be written after all (stdout or the summary file failed).`,
		Example: `  # the newest kill-mid-burst run against the committed baseline
  rmqtorture compare baselines/kill-mid-burst.result.json $(ls -d rmqtorture-results/kill-mid-burst-* | tail -1)
  rmqtorture compare --max-throughput-drop 30 --max-recovery-ms 20000 old.json new.json
  rmqtorture compare -o json base.json result.json
  rmqtorture compare --summary-file "$GITHUB_STEP_SUMMARY" base.json result.json`,
		Args: func(c *cobra.Command, args []string) error {
			switch {
			case len(args) > 2:
				// A glob such as out/kill-mid-burst-*/result.json matches
				// every run of the scenario.
				shown := strings.Join(args[:3], " ")
				if len(args) > 3 {
					shown += " …"
				}
				return usageErr(fmt.Errorf("compare takes two files, BASELINE.json and RESULT.json; got %d (%s): to compare the newest run, pass $(ls -d DIR/SCENARIO-* | tail -1)", len(args), shown))
			case len(args) != 2:
				return usageErr(fmt.Errorf("compare takes two files, BASELINE.json and RESULT.json; got %d", len(args)))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error { return o.run(c, args[0], args[1]) },
	}
	fl := c.Flags()
	fl.Float64Var(&o.th.MaxThroughputDropPct, "max-throughput-drop", o.th.MaxThroughputDropPct, "PCT: largest allowed drop of publish msg/s (before fault) and confirm msg/s below the baseline, 0–100 (100: never fails)")
	fl.Float64Var(&o.th.MaxP99RisePct, "max-p99-rise", o.th.MaxP99RisePct, "PCT: largest allowed rise of confirm latency p99 above the baseline")
	fl.Float64Var(&o.recoveryMS, "max-recovery-ms", 0, "MS: longest allowed client recovery (fault → first publish or confirm after reconnecting); unchecked unless given")
	fl.Float64Var(&o.recoveryRise, "max-recovery-rise", 0, "PCT: largest allowed rise of client recovery above the baseline; unchecked unless given")
	fl.Float64Var(&o.th.MaxMissingRisePts, "max-missing-rise", o.th.MaxMissingRisePts, "PTS: largest allowed rise of fire-and-forget's missing share (unconfirmed missing ÷ sent) above the baseline's, in percentage points, 0–100")
	fl.StringVar(&o.summaryFile, "summary-file", "", "also append the markdown to this file (created if missing), e.g. $GITHUB_STEP_SUMMARY")
	addOutputFlag(c, &o.output, outMarkdown, outJSON)
	return c
}

func (o *compareOpts) run(c *cobra.Command, basePath, resPath string) error {
	if c.Flags().Changed("max-recovery-ms") {
		o.th.MaxRecoveryMS = &o.recoveryMS
	}
	if c.Flags().Changed("max-recovery-rise") {
		o.th.MaxRecoveryRisePct = &o.recoveryRise
	}
	if err := o.th.Validate(); err != nil {
		return usageErr(err)
	}
	if o.summaryFile != "" {
		if err := checkAppendFile("--summary-file", o.summaryFile); err != nil {
			return err
		}
	}
	basePath, resPath = resultFile(basePath), resultFile(resPath)
	base, err := loadResult(basePath)
	if err != nil {
		return err
	}
	res, err := loadResult(resPath)
	if err != nil {
		return err
	}
	if err := reports.Comparable(basePath, base, resPath, res); err != nil {
		return causeErr(CauseBadResult, err)
	}
	cmp := reports.Compare(base, res, o.th)
	var md bytes.Buffer
	if err := reports.CompareMarkdown(&md, cmp, basePath, resPath); err != nil {
		return opErr(err)
	}
	out := md.Bytes()
	if o.output == outJSON {
		var js bytes.Buffer
		if err := reports.CompareJSON(&js, cmp, basePath, resPath); err != nil {
			return opErr(err)
		}
		out = js.Bytes()
	}
	if _, err := c.OutOrStdout().Write(out); err != nil {
		return causeErr(CauseWriteFailed, fmt.Errorf("write the comparison: %w", err))
	}
	if o.summaryFile != "" {
		if err := appendFile(o.summaryFile, md.Bytes()); err != nil {
			return causeErr(CauseWriteFailed, fmt.Errorf("summary file: %w", err))
		}
	}
	if cmp.Regressed() {
		return causeErr(CauseRegression, fmt.Errorf("%d %s against baseline %s", len(cmp.Regressions), pluralize(len(cmp.Regressions), "regression", "regressions"), basePath))
	}
	return nil
}

// resultFile is path, or path/result.json when path is a folder (a run
// folder, as run writes it).
func resultFile(path string) string {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return filepath.Join(path, "result.json")
	}
	return path
}

func appendFile(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	// A leading blank line keeps the markdown apart from what is already there.
	_, err = f.Write(append([]byte("\n"), b...))
	return errors.Join(err, f.Close())
}

func pluralize(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
