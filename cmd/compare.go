package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/reports"
)

type compareOpts struct {
	th           reports.Thresholds
	recoveryMS   float64
	recoveryRise float64
	summaryFile  string
}

func newCompare() *cobra.Command {
	o := &compareOpts{th: reports.DefaultThresholds()}
	c := &cobra.Command{
		Use:   "compare BASELINE.json RESULT.json",
		Short: "Compare a result.json with a baseline of the same scenario; exit 1 on a regression",
		Long: `compare reads two result.json files of the same scenario (and schema_version)
and checks the result against the baseline mode by mode (and matrix cell by
cell, matched by mode and cell):

  - lost confirmed messages (lost > 0 where lost_allowed is false): always a regression
  - a mode whose own verdict is not pass, or missing from the result: always a regression
  - publish msg/s before the fault (pre_fault_publish_rate_msgs_per_s), and
    confirm msg/s (confirm_rate_msgs_per_s) for confirm modes: may drop at most
    --max-throughput-drop percent
  - confirm latency p99 (confirm_latency_ms.p99): may rise at most --max-p99-rise percent
  - client recovery (client_recovery_ms): held to --max-recovery-ms and
    --max-recovery-rise when given

A value exactly at its limit passes. It prints a markdown table per mode
(metric, baseline, result, change, limit, ok or REGRESSION) on stdout and, with
--summary-file, appends the same markdown to that file (e.g. $GITHUB_STEP_SUMMARY).
Thresholds come from flags only; the scenario's expect block is not read.

Exit codes: 0 no regression, 1 regression, 2 bad input (a file unreadable or
not a result.json, different scenarios, a schema_version this rmqtorture does
not read, bad flags, a --summary-file that cannot be appended to: checked
first), 4 the comparison could not be written after all (stdout or the
summary file failed).`,
		Example: `  rmqtorture compare baselines/kill-mid-burst.result.json out/kill-mid-burst-*/result.json
  rmqtorture compare --max-throughput-drop 30 --max-recovery-ms 20000 old.json new.json
  rmqtorture compare --summary-file "$GITHUB_STEP_SUMMARY" base.json result.json`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 2 {
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
	fl.StringVar(&o.summaryFile, "summary-file", "", "also append the markdown to this file (created if missing), e.g. $GITHUB_STEP_SUMMARY")
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
	if _, err := c.OutOrStdout().Write(md.Bytes()); err != nil {
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
