package cmd

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
	"github.com/rmqtorture/rmqtorture/verdict"
)

// check over the folders of a run split across processes (parts.go):
// every load part's history and the drain's are replayed into one ledger
// per burst, parts first (each with its own confirm tracker: epochs and
// delivery tags are a process's own), then judged once with the scenario's
// expectations from the histories. A part whose folder is missing leaves
// its ids unaccounted: the verdict is inconclusive and names it, never a
// loss (those ids were never seen published).

// partFolder is one folder of a split run.
type partFolder struct {
	dir string
	res *scenario.Result
}

// splitFolders loads the result.json of every folder; it returns nil when
// none is a part of a split run (check then re-judges each run on its
// own), else the folders, or a bad-input error when some are not parts.
func splitFolders(dirs []string) ([]partFolder, error) {
	var out []partFolder
	var errs []error
	parts := 0
	for _, dir := range dirs {
		res, err := loadResult(filepath.Join(dir, "result.json"))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if res.LoadPart != nil {
			parts++
		}
		out = append(out, partFolder{dir, res})
	}
	if parts == 0 {
		return nil, nil
	}
	if len(errs) > 0 {
		return nil, causeErr(CauseBadResult, errors.Join(errs...))
	}
	return out, nil
}

// checkSplitFolders validates the folders as the parts of one split run and
// returns them by role: load parts by index (1-based; nil: missing) and
// the drain (nil: missing).
func checkSplitFolders(folders []partFolder) ([]*partFolder, *partFolder, error) {
	first := folders[0]
	for _, f := range folders {
		if f.res.LoadPart != nil {
			first = f
			break
		}
	}
	fp := first.res.LoadPart
	byIndex := make([]*partFolder, fp.Parts+1)
	var drain *partFolder
	bad := func(format string, args ...any) ([]*partFolder, *partFolder, error) {
		return nil, nil, causeErr(CauseBadResult, fmt.Errorf(format, args...))
	}
	for i := range folders {
		f := &folders[i]
		p := f.res.LoadPart
		switch {
		case p == nil:
			return bad("%s is a whole run, not a part of split run %s: check it on its own", f.dir, fp.RunID)
		case p.RunID != fp.RunID:
			return bad("%s is of split run %s, %s of split run %s: give the folders of one run", f.dir, p.RunID, first.dir, fp.RunID)
		case f.res.Scenario != first.res.Scenario:
			return bad("%s ran scenario %q, %s scenario %q: the parts of one run run one scenario", f.dir, f.res.Scenario, first.dir, first.res.Scenario)
		case p.Parts != fp.Parts:
			return bad("%s says the run has %d load parts, %s says %d", f.dir, p.Parts, first.dir, fp.Parts)
		case f.res.Messages != first.res.Messages:
			return bad("%s published bursts of %d orders, %s of %d: every part must run with the same load.messages", f.dir, f.res.Messages, first.dir, first.res.Messages)
		case p.Drain && drain != nil:
			return bad("%s and %s are both the drain of split run %s", drain.dir, f.dir, p.RunID)
		case p.Drain:
			drain = f
		case p.Index < 1 || p.Index > p.Parts:
			return bad("%s: load_part.part %d is not within 1–%d", f.dir, p.Index, p.Parts)
		case byIndex[p.Index] != nil:
			return bad("%s and %s are both %s of split run %s", byIndex[p.Index].dir, f.dir, p, p.RunID)
		default:
			if want0, want1 := metrics.PartRange(f.res.Messages, p.Index, p.Parts); p.First != want0 || p.End != want1 {
				return bad("%s: %s publishes ids %d–%d, but its share of %d is %d–%d", f.dir, p, p.First, p.End-1, f.res.Messages, want0, want1-1)
			}
			byIndex[p.Index] = f
		}
	}
	return byIndex[1:], drain, nil
}

// mergedBurst is one burst (one queue) of a split run, merged.
type mergedBurst struct {
	res     scenario.ModeResult
	parts   int      // load parts whose history was merged
	drained bool     // the drain's history of the queue was merged
	diffs   []string // inconsistencies of the histories
}

// mergeSplitRun merges every burst of the split run in folders: one result
// per queue, in the order the folders list them.
func mergeSplitRun(folders []partFolder) ([]mergedBurst, error) {
	parts, drain, err := checkSplitFolders(folders)
	if err != nil {
		return nil, err
	}
	var queues []string
	for _, f := range append(slices.Clone(parts), drain) {
		if f == nil {
			continue
		}
		for _, m := range f.res.Modes {
			if !slices.Contains(queues, m.Queue) && m.Queue != "" {
				queues = append(queues, m.Queue)
			}
		}
	}
	var out []mergedBurst
	for _, q := range queues {
		mb, err := mergeBurst(q, parts, drain)
		if err != nil {
			return nil, causeErr(CauseBadResult, err)
		}
		out = append(out, mb)
	}
	return out, nil
}

// burstOf is f's burst on queue q with a history, and its index in
// f's result.json, or nil.
func burstOf(f *partFolder, q string) (*scenario.ModeResult, int) {
	if f == nil {
		return nil, 0
	}
	for i := range f.res.Modes {
		if m := &f.res.Modes[i]; m.Queue == q && m.History != "" {
			return m, i
		}
	}
	return nil, 0
}

// replayInto replays f's history of burst m (modes[i] of its result.json)
// into split, as a load part or as the drain, and returns the history's
// inconsistencies. The history must be a file of f's folder
// (historyName).
func replayInto(split *verdict.Split, f *partFolder, m *scenario.ModeResult, i int) ([]string, error) {
	if err := historyName(f.dir, i, m.History); err != nil {
		return nil, err
	}
	path := filepath.Join(f.dir, m.History)
	file, err := openHistory(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	replay := split.LoadPart
	if f.res.LoadPart.Drain {
		replay = split.Drain
	}
	incons, err := replay(file, f.res.Messages, *f.res.LoadPart, m.Mode)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return incons, nil
}

// mergeBurst replays the parts' and the drain's histories of queue q into
// one ledger and concludes it on their merged evidence.
func mergeBurst(q string, parts []*partFolder, drain *partFolder) (mergedBurst, error) {
	var mb mergedBurst
	split := verdict.NewSplit(len(parts))
	for k, f := range parts {
		m, i := burstOf(f, q)
		if m == nil {
			split.MissingPart(k + 1)
			continue
		}
		incons, err := replayInto(split, f, m, i)
		if err != nil {
			return mb, err
		}
		mb.parts++
		mb.diffs = append(mb.diffs, prefixed(f.res.LoadPart.String()+": ", incons)...)
	}
	if m, i := burstOf(drain, q); m != nil {
		incons, err := replayInto(split, drain, m, i)
		if err != nil {
			return mb, err
		}
		mb.diffs = append(mb.diffs, prefixed("drain: ", incons)...)
		mb.drained = true
	} else if drain == nil {
		split.NoDrain(errors.New("the drain's folder was not given: no delivery is known"))
	} else {
		split.NoDrain(fmt.Errorf("the drain has no history of queue %s: no delivery is known", q))
	}
	mb.res.Queue = q
	if err := split.Conclude(&mb.res); err != nil {
		return mb, fmt.Errorf("queue %s: %w", q, err)
	}
	return mb, nil
}

func prefixed(prefix string, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = prefix + l
	}
	return out
}

// checkSplitRun prints one line per merged burst (and its reasons) and
// returns the cause of the worst: a failed verdict, a history that
// contradicts itself (check mismatch), inconclusive, or pass.
func checkSplitRun(folders []partFolder) ([]string, error) {
	bursts, err := mergeSplitRun(folders)
	if err != nil {
		return nil, err
	}
	p := folders[0].res.LoadPart
	var lines []string
	worst := CausePass
	for _, b := range bursts {
		c := b.res.Counts
		with := "merged with the drain"
		if !b.drained {
			with = "merged, without the drain"
		}
		lines = append(lines, fmt.Sprintf("%s: split run %s, %d of %d load parts %s: sent %d, confirmed %d, delivered %d, lost %d, in doubt %d, unconfirmed missing %d, duplicates %d, unexpected %d: %s",
			b.res.Mode, p.RunID, b.parts, p.Parts, with, c.Sent, c.Confirmed, c.Delivered, c.Lost, c.InDoubt, c.UnconfirmedMissing, c.Duplicates, c.Unexpected, b.res.Verdict.Status))
		for _, r := range b.res.Verdict.Reasons {
			lines = append(lines, "  "+r)
		}
		for _, d := range b.diffs {
			lines = append(lines, "  history inconsistency: "+d)
		}
		switch {
		case b.res.Verdict.Status == scenario.Fail:
			worst = worse(worst, CauseVerdictFail)
		case len(b.diffs) > 0:
			worst = worse(worst, CauseCheckMismatch)
		case b.res.Verdict.Status == scenario.Inconclusive:
			worst = worse(worst, CauseInconclusive)
		}
	}
	if worst == CausePass {
		return lines, nil
	}
	return lines, causeErr(worst, fmt.Errorf("split run %s: %s", p.RunID, strings.ToLower(string(worst))))
}
