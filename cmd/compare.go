package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/rmqtorture/rmqtorture/inputfile"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/reports"
)

type compareOpts struct {
	th             reports.Thresholds
	recoveryMS     float64
	recoveryRise   float64
	summaryFile    string
	output         outputFormat
	strict         bool
	acrossVersions bool
	acceptFile     string
}

func newCompare() *cobra.Command {
	o := &compareOpts{th: reports.DefaultThresholds()}
	c := &cobra.Command{
		Use:   "compare BASELINE CANDIDATE | compare BASELINE... -- CANDIDATE...",
		Short: "Compare a result.json with a baseline of the same scenario; exit 1 on a regression",
		Long:  compareLong,
		Example: `  # the newest kill-mid-burst run against the committed baseline
  rmqtorture compare baselines/kill-mid-burst.result.json \
    $(ls -d rmqtorture-results/kill-mid-burst-* | tail -1)
  rmqtorture compare --max-throughput-drop 30 --max-recovery-ms 20000 old.json new.json
  rmqtorture compare -o json base.json result.json
  rmqtorture compare --summary-file "$GITHUB_STEP_SUMMARY" base.json result.json
  # every scenario of an upgrade, 4.0 against 4.3, with the differences you expect
  rmqtorture compare --across-versions --accept accepted.yaml old-runs/ new-runs/
  rmqtorture compare --across-versions old/a.json old/b.json -- new/a.json new/b.json`,
		Args: compareArgs,
		RunE: func(c *cobra.Command, args []string) error {
			base, cand := args[:1], args[1:]
			if d := c.ArgsLenAtDash(); d >= 0 {
				base, cand = args[:d], args[d:]
			}
			return o.run(c, base, cand)
		},
	}
	o.addFlags(c)
	return c
}

// compareLong is compare's help text.
const compareLong = `compare reads two result.json files of the same scenario and checks the result
(the candidate) against the baseline mode by mode (and matrix cell by cell,
matched by mode and cell). Each argument is a result.json or a run folder
holding one. Both files are checked against the schema of their
schema_version first (1 to 3; older layouts are upgraded, and what they did
not record is not compared).

  - lost confirmed messages (lost > 0 where lost_allowed is false): always a regression
  - a mode whose own verdict is not pass, or missing from the result: always a regression
  - fire-and-forget's missing share (unconfirmed_missing ÷ sent, published and
    never delivered): may rise at most --max-missing-rise percentage points
  - what the broker took in before the fault (intake_rate_msgs_per_s; in
    older results publish msg/s before the fault and confirm msg/s): may drop
    at most --max-throughput-drop percent; a confirm mode's as a ratio to
    fire-and-forget's in the same run, when both files ran it; a rate either
    file could not tell (intake_unknown) is not checked
  - confirm latency p99 (confirm_latency_ms.p99): may rise at most --max-p99-rise percent
  - client recovery (client_recovery_ms): held to --max-recovery-ms and
    --max-recovery-rise when given

The defaults sit just outside what ten identical runs of kill-mid-burst and
baseline differed by (docs/ci.md); narrower limits need your own runner's
spread. A value exactly at its limit passes. It prints a markdown table per mode
(metric, baseline, result, change, limit, ok or REGRESSION) on stdout, or with
-o json the same as one JSON object (figures as numbers); --summary-file
appends the markdown to that file (e.g. $GITHUB_STEP_SUMMARY).
Thresholds come from flags only; the scenario's expect block is not read.

Every result names its broker (image, and broker_version as the broker
reported it). When the two ran on different broker versions or images,
compare warns on stderr and in its output ("baseline ran RabbitMQ 4.0.5
(rmqtorture/rabbitmq:4.0-trixie), candidate RabbitMQ 4.3.6 (...): differences
may be the broker's, not your change"); --strict makes that a regression
(exit 1) unless --across-versions says the comparison is across versions on
purpose. A result without broker_version is "an unknown version", never
taken for a different one.

Several results per side: a side may be a folder of run folders (each
holding a result.json), or list files and run folders with -- between the
sides (compare a.json b.json -- c.json d.json). Results are paired by
scenario (of several of one scenario on a side, the newest), then by mode and
cell; what only one side has is listed as unpaired (only in the baseline: a
regression). For each pair compare shows what changed: the checks above,
every ledger count that differs (in doubt, nacked, returned, duplicates,
dead-lettered, deliveries per message: shown, held only through the
verdict) and throughput, confirm p99 and recovery as ratios. This table is
used with --across-versions, --accept, or several results on a side.

--accept FILE lists the differences you expect, each with its reason:
  accept:
    - scenario: delivery-limit
      mode: confirm-window        # optional: every mode
      field: dead_lettered        # as result.json names it
      because: RabbitMQ 4.3 changed how nack-requeue counts (release notes)
An accepted difference is shown as accepted with its reason and fails
nothing; so is a difference in a field the result's version_scope states
for that mode (its because is cited). Fields: verdict, present, lost,
unconfirmed_missing, in_doubt, nacked, returned, duplicates, dead_lettered,
deliveries_per_message, pre_fault_publish_rate_msgs_per_s,
confirm_rate_msgs_per_s, confirm_latency_ms.p99, client_recovery_ms.

Exit codes: 0 no regression, 1 regression (not accepted; or, with --strict,
different brokers without --across-versions), 2 bad input (a file
unreadable, not JSON or not matching its schema, naming the file and the
field; different scenarios; a schema_version this rmqtorture does not read;
bad flags; an --accept file that is not valid, with file:line and field; a
--summary-file that cannot be appended to: checked first), 4 the comparison
could not be written after all (stdout or the summary file failed).`

// compareArgs takes BASELINE CANDIDATE, or one or more results on each side
// of --; anything else is bad input (exit 2).
func compareArgs(c *cobra.Command, args []string) error {
	if d := c.ArgsLenAtDash(); d >= 0 {
		if d == 0 || d == len(args) {
			return usageErr(fmt.Errorf("compare BASELINE... -- CANDIDATE...: give at least one result on each side of --; got %d before it and %d after", d, len(args)-d))
		}
		return nil
	}
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
}

// addFlags declares compare's flags on c.
func (o *compareOpts) addFlags(c *cobra.Command) {
	fl := c.Flags()
	fl.Float64Var(&o.th.MaxThroughputDropPct, "max-throughput-drop", o.th.MaxThroughputDropPct, "PCT: largest allowed drop of publish msg/s (before fault) and confirm msg/s below the baseline, 0–100 (100: never fails)")
	fl.Float64Var(&o.th.MaxP99RisePct, "max-p99-rise", o.th.MaxP99RisePct, "PCT: largest allowed rise of confirm latency p99 above the baseline")
	fl.Float64Var(&o.recoveryMS, "max-recovery-ms", 0, "MS: longest allowed client recovery (fault → first publish or confirm after reconnecting); unchecked unless given")
	fl.Float64Var(&o.recoveryRise, "max-recovery-rise", 0, "PCT: largest allowed rise of client recovery above the baseline; unchecked unless given")
	fl.Float64Var(&o.th.MaxMissingRisePts, "max-missing-rise", o.th.MaxMissingRisePts, "PTS: largest allowed rise of fire-and-forget's missing share (unconfirmed missing ÷ sent) above the baseline's, in percentage points, 0–100")
	fl.BoolVar(&o.strict, "strict", false, "exit 1 when the baseline and the candidate ran on different broker versions or images (unless --across-versions)")
	fl.BoolVar(&o.acrossVersions, "across-versions", false, "compare across broker versions on purpose: a broker difference is the question, not a warning; shows the what-changed table")
	fl.StringVar(&o.acceptFile, "accept", "", "FILE: YAML list of accepted differences {scenario, mode, field, because}; an accepted difference fails nothing")
	fl.StringVar(&o.summaryFile, "summary-file", "", "also append the markdown to this file (created if missing), e.g. $GITHUB_STEP_SUMMARY")
	addOutputFlag(c, &o.output, outMarkdown, outJSON)
}

func (o *compareOpts) run(c *cobra.Command, baseArgs, candArgs []string) error {
	if c.Flags().Changed("max-recovery-ms") {
		o.th.MaxRecoveryMS = &o.recoveryMS
	}
	if c.Flags().Changed("max-recovery-rise") {
		o.th.MaxRecoveryRisePct = &o.recoveryRise
	}
	if err := o.th.Validate(); err != nil {
		return usageErr(err)
	}
	accepts, err := loadAccept(o.acceptFile)
	if err != nil {
		return err
	}
	if o.summaryFile != "" {
		if err := checkAppendFile("--summary-file", o.summaryFile); err != nil {
			return err
		}
	}
	bases, err := loadSide(baseArgs)
	if err != nil {
		return err
	}
	cands, err := loadSide(candArgs)
	if err != nil {
		return err
	}
	if o.acrossVersions || o.acceptFile != "" || len(baseArgs) > 1 || len(candArgs) > 1 || len(bases) > 1 || len(cands) > 1 {
		return o.runVersions(c, strings.Join(baseArgs, " "), bases, strings.Join(candArgs, " "), cands, accepts)
	}
	basePath, resPath := bases[0].File, cands[0].File
	base, res := bases[0].Result, cands[0].Result
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
	var warns []string
	if cmp.BrokerWarning != "" {
		warns = []string{cmp.BrokerWarning}
	}
	if err := o.emit(c, out, md.Bytes(), warns); err != nil {
		return err
	}
	return o.outcome(len(cmp.Regressions), warns, "against baseline "+basePath)
}

// runVersions compares sets of results, paired by scenario, mode and cell.
func (o *compareOpts) runVersions(c *cobra.Command, baseName string, bases []reports.NamedResult, candName string, cands []reports.NamedResult, accepts []reports.Accept) error {
	v := reports.CompareVersions(baseName, bases, candName, cands, o.th, accepts)
	v.AcrossVersions = o.acrossVersions
	var md bytes.Buffer
	if err := reports.CompareVersionsMarkdown(&md, v); err != nil {
		return opErr(err)
	}
	out := md.Bytes()
	if o.output == outJSON {
		var js bytes.Buffer
		if err := reports.CompareVersionsJSON(&js, v); err != nil {
			return opErr(err)
		}
		out = js.Bytes()
	}
	if err := o.emit(c, out, md.Bytes(), v.Warnings); err != nil {
		return err
	}
	return o.outcome(len(v.Regressions), v.Warnings, "against baseline "+baseName)
}

// emit prints the broker warnings on stderr (unless --across-versions),
// writes out on stdout and appends md to the summary file, if any.
func (o *compareOpts) emit(c *cobra.Command, out, md []byte, warns []string) error {
	if !o.acrossVersions {
		for _, w := range warns {
			fmt.Fprintf(c.ErrOrStderr(), "warning: %s\n", w)
		}
	}
	if _, err := c.OutOrStdout().Write(out); err != nil {
		return causeErr(CauseWriteFailed, fmt.Errorf("write the comparison: %w", err))
	}
	if o.summaryFile != "" {
		if err := appendFile(o.summaryFile, md); err != nil {
			return causeErr(CauseWriteFailed, fmt.Errorf("summary file: %w", err))
		}
	}
	return nil
}

// outcome is compare's exit: a regression (exit 1) for n unaccepted
// regressions, or under --strict for a broker warning without
// --across-versions; nil otherwise.
func (o *compareOpts) outcome(n int, warns []string, against string) error {
	var why []string
	if n > 0 {
		why = append(why, fmt.Sprintf("%d %s %s", n, pluralize(n, "regression", "regressions"), against))
	}
	if o.strict && !o.acrossVersions && len(warns) > 0 {
		why = append(why, "--strict: the baseline and the candidate ran on different brokers (pass --across-versions to compare across versions on purpose)")
	}
	if len(why) == 0 {
		return nil
	}
	return causeErr(CauseRegression, errors.New(strings.Join(why, "; ")))
}

// loadAccept reads and validates --accept FILE ("": none); a bad file is
// bad input (exit 2), each problem with file:line and field.
func loadAccept(path string) ([]reports.Accept, error) {
	if path == "" {
		return nil, nil
	}
	data, err := inputfile.Read(path, "an --accept file", inputfile.MaxScenarioBytes)
	if inputfile.IsRefused(err) {
		return nil, usageErr(fmt.Errorf("--accept %w", err))
	} else if err != nil {
		return nil, usageErr(fmt.Errorf("--accept %s: %w", path, unwrapPathErr(err)))
	}
	accepts, err := reports.ParseAccept(path, data)
	if err != nil {
		return nil, usageErr(err)
	}
	return accepts, nil
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// loadSide reads one side's results: each argument is a result.json, a run
// folder holding one, or a folder of run folders (each of its folders that
// holds a result.json, in name order).
func loadSide(args []string) ([]reports.NamedResult, error) {
	var out []reports.NamedResult
	for _, a := range args {
		files := []string{resultFile(a)}
		if runs := runFolders(a); runs != nil {
			files = runs
		}
		for _, f := range files {
			r, err := loadResult(f)
			if err != nil {
				return nil, err
			}
			if err := reports.Comparable(f, r, f, r); err != nil {
				return nil, causeErr(CauseBadResult, err)
			}
			out = append(out, reports.NamedResult{File: f, Result: r})
		}
	}
	return out, nil
}

// runFolders lists the result.json of each folder in dir when dir is a
// folder without a result.json of its own; nil otherwise (or when none of
// its folders holds one).
func runFolders(dir string) []string {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "result.json")); err == nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		f := filepath.Join(dir, e.Name(), "result.json")
		if fi, err := os.Stat(f); e.IsDir() && err == nil && fi.Mode().IsRegular() {
			out = append(out, f)
		}
	}
	return out
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
	f, err := openAppend(path)
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
