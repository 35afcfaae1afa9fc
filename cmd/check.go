package cmd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/inputfile"
	"github.com/rmqtorture/rmqtorture/redact"
	"github.com/rmqtorture/rmqtorture/scenario"
	"github.com/rmqtorture/rmqtorture/verdict"
)

// historyExt is the extension of the history files a run writes.
const historyExt = "bin.gz"

// historySink writes burst index's history to dir/history-<index>.bin.gz
// and cites that name in the burst's result.
func historySink(dir string) func(int, *scenario.ModeResult) (io.WriteCloser, error) {
	return func(i int, res *scenario.ModeResult) (io.WriteCloser, error) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		name := fmt.Sprintf("history-%d.%s", i, historyExt)
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		res.History = name
		return f, nil
	}
}

func newCheck() *cobra.Command {
	return &cobra.Command{
		Use:   "check RUN_DIR [RUN_DIR...]",
		Short: "Re-judge runs from their recorded histories and compare with result.json",
		Long: `check rebuilds each mode's ledger from the history the run recorded
(every publish attempt, basic.ack/nack by epoch and delivery tag, basic.return,
channel close, delivery), resolving delivery tags itself, reconciles it,
judges it with the scenario's expectations and the run's observations stored
in the history, and compares counts, id ranges and verdict with result.json.
It prints one line per mode.

Given the folders of a run split across processes (run --load-only --part
K/N, run --drain-only), check merges the histories of every load part and
the drain into one ledger per mode and judges it once, with the scenario's
expectations: one line per mode with the merged counts and the verdict. A
load part whose folder is not given leaves its ids unaccounted: the
verdict is inconclusive and names the part, never a loss.

Exit codes: 0 every mode matches (a split run: passes), 1 a re-judged
count, id range or verdict differs, or the history contradicts itself (a
split run: the merged verdict fails), 2 bad input (a missing folder, a
malformed result.json or history; folders of different split runs, or a
part given twice), 3 a split run's merged verdict is inconclusive (a part
or the drain missing).`,
		Example: `  rmqtorture check rmqtorture-results/kill-mid-burst-20250101T000000Z-ab12cd
  rmqtorture check parts/*/baseline-*`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr(errors.New("check takes one or more run folders"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			split, err := splitFolders(args)
			if err != nil {
				return err
			}
			if split != nil {
				lines, err := checkSplitRun(split)
				for _, l := range lines {
					// A history and its result are files anyone may have
					// edited: what they quote is printed without terminal
					// codes or URL passwords.
					fmt.Fprintln(c.OutOrStdout(), redact.Foreign(l))
				}
				return err
			}
			var failed, bad []error
			for _, dir := range args {
				lines, err := checkRun(dir)
				for _, l := range lines {
					// A history and its result are files anyone may have
					// edited: what they quote is printed without terminal
					// codes or URL passwords.
					fmt.Fprintln(c.OutOrStdout(), redact.Foreign(l))
				}
				var ee *exitError
				switch {
				case errors.As(err, &ee) && ee.code == ExitUsage:
					bad = append(bad, err)
				case err != nil:
					failed = append(failed, err)
				}
			}
			if len(bad) > 0 {
				return causeErr(CauseBadResult, errors.Join(bad...))
			}
			if len(failed) > 0 {
				return causeErr(CauseCheckMismatch, errors.Join(failed...))
			}
			return nil
		},
	}
}

// checkRun re-judges every mode of the run in dir; it returns one line per
// mode, and an exit error: ExitUsage for bad input, ExitFail for a mismatch.
func checkRun(dir string) ([]string, error) {
	switch fi, err := os.Stat(dir); {
	case errors.Is(err, os.ErrNotExist):
		return nil, causeErr(CauseBadResult, fmt.Errorf("%s: no such run folder", dir))
	case err == nil && !fi.IsDir():
		return nil, causeErr(CauseBadResult, fmt.Errorf("%s: not a folder; check takes a run folder, the one that holds result.json and its histories", dir))
	}
	res, err := loadResult(filepath.Join(dir, "result.json"))
	if err != nil {
		return nil, err
	}
	if len(res.Modes) == 0 {
		return nil, causeErr(CauseCheckMismatch, fmt.Errorf("%s: result.json lists no mode: nothing to check (a history is re-judged against the mode that names it)", dir))
	}
	var lines []string
	mismatches := 0
	for i := range res.Modes {
		m := &res.Modes[i]
		label := modeLabel(m)
		if m.NotRun {
			lines = append(lines, fmt.Sprintf("%s: not run; nothing to check", label))
			continue
		}
		if m.History == "" {
			return lines, causeErr(CauseBadResult, fmt.Errorf("%s: %s has no recorded history (modes[%d].history): nothing to re-judge", dir, label, i))
		}
		if err := historyName(dir, i, m.History); err != nil {
			return lines, causeErr(CauseBadResult, err)
		}
		diffs, err := recheck(filepath.Join(dir, m.History), res.Messages, m)
		if err != nil {
			return lines, causeErr(CauseBadResult, err)
		}
		if len(diffs) == 0 {
			lines = append(lines, fmt.Sprintf("%s: re-judged %s; counts, id ranges and verdict match result.json", label, m.Verdict.Status))
			continue
		}
		mismatches++
		lines = append(lines, fmt.Sprintf("%s: re-judged from %s, differs from result.json:", label, m.History))
		for _, d := range diffs {
			lines = append(lines, "  "+d)
		}
	}
	if mismatches > 0 {
		return lines, causeErr(CauseCheckMismatch, fmt.Errorf("%s: %d of %d modes differ from their history", dir, mismatches, len(res.Modes)))
	}
	return lines, nil
}

func modeLabel(m *scenario.ModeResult) string {
	if m.Cell == nil {
		return string(m.Mode)
	}
	return fmt.Sprintf("%s (%s, %s, repeat %d)", m.Mode, m.Cell.QueueType, scenario.Persistence(m.Cell.Persistent), m.Cell.Repeat)
}

// recheck replays the history at path and returns how the re-judged burst
// differs from m; an error means the history cannot be read.
func recheck(path string, messages int, m *scenario.ModeResult) ([]string, error) {
	f, err := openHistory(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	got, incons, err := verdict.RecheckHistory(f, messages)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var diffs []string
	for _, s := range incons {
		diffs = append(diffs, "history inconsistency: "+s)
	}
	if string(got.Mode) != string(m.Mode) {
		diffs = append(diffs, fmt.Sprintf("mode: history %s, result.json %s", got.Mode, m.Mode))
	}
	diffs = append(diffs, fieldDiffs("", reflect.ValueOf(got.Counts), reflect.ValueOf(m.Counts))...)
	diffs = append(diffs, fieldDiffs("ids.", reflect.ValueOf(got.IDs), reflect.ValueOf(m.IDs))...)
	if got.Verdict.Status != m.Verdict.Status {
		diffs = append(diffs, fmt.Sprintf("verdict: history %s, result.json %s", got.Verdict.Status, m.Verdict.Status))
	}
	if !slices.Equal(got.Verdict.Reasons, m.Verdict.Reasons) {
		diffs = append(diffs, fmt.Sprintf("verdict reasons: history %q, result.json %q", got.Verdict.Reasons, m.Verdict.Reasons))
	}
	return diffs, nil
}

// historyName refuses a recorded history (modes[i].history of dir's
// result.json) that is not a plain file name of the run folder: a result
// is a file anyone may have edited, and check reads the run folder,
// nothing else.
func historyName(dir string, i int, name string) error {
	if !filepath.IsLocal(name) || filepath.Base(name) != name {
		return fmt.Errorf("%s: modes[%d].history %q: not a file name in the run folder", dir, i, name)
	}
	return nil
}

// openHistory opens the history file at path, which must be in a run
// folder; verdict reads it (its header must hold the burst result.json
// names); the caller closes the file.
func openHistory(path string) (*os.File, error) {
	if err := inRunFolder(path); err != nil {
		return nil, err
	}
	f, err := inputfile.Open(path, "a history", 0)
	if inputfile.IsRefused(err) {
		return nil, err
	} else if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	return f, nil
}

// fieldDiffs lists the fields of two structs of one type that differ, by
// their JSON names.
func fieldDiffs(prefix string, got, want reflect.Value) []string {
	var out []string
	for i := range got.NumField() {
		g, w := got.Field(i).Interface(), want.Field(i).Interface()
		if reflect.DeepEqual(g, w) || (reflect.ValueOf(g).Kind() == reflect.Slice && got.Field(i).Len() == 0 && want.Field(i).Len() == 0) {
			continue
		}
		name, _, _ := strings.Cut(got.Type().Field(i).Tag.Get("json"), ",")
		out = append(out, fmt.Sprintf("%s%s: history %v, result.json %v", prefix, name, g, w))
	}
	return out
}

// inRunFolder refuses a history that is a symbolic link out of its run
// folder: a result is a file anyone may have edited, and so is the folder
// it came in; check reads that folder, nothing else.
func inRunFolder(path string) error {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return nil // missing: the open says so
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("read history: %w", err)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("read history: %w", err)
	}
	if filepath.Dir(target) != dir {
		link, _ := os.Readlink(path)
		return causeErr(CauseBadResult, fmt.Errorf("%s: a link to %s, out of the run folder: check reads only the run folder's own files", path, link))
	}
	return nil
}
