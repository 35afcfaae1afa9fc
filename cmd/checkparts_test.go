package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
	"github.com/rmqtorture/rmqtorture/verdict"
)

// writeSplitFolder writes the folder of one share of split run "r1" of a
// 10-id confirm-window burst on queue q: load part k of n publishing its
// ids on epoch 1 with tags from 1, each acked (k 0: the drain, delivering
// deliver). It returns the folder.
func writeSplitFolder(t *testing.T, root string, k, n int, deliver ...int) string {
	t.Helper()
	const messages = 10
	p := metrics.Part{RunID: "r1", Index: k, Parts: n, Drain: k == 0}
	if k > 0 {
		p.First, p.End = metrics.PartRange(messages, k, n)
	}
	dir := filepath.Join(root, "s"+partDir(&p))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := verdict.NewHistoryWriter(&buf, metrics.HistoryHeader{Prefix: "q-", Messages: messages, ConfirmMode: true, Start: checkStart, Part: &p}, verdict.Header{Mode: scenario.ConfirmWindow})
	if err != nil {
		t.Fatal(err)
	}
	l := metrics.NewLedger("q-", messages)
	l.RecordTo(w)
	tr := metrics.NewConfirmTracker().ReportTo(l)
	for seq := p.First; seq < p.End; seq++ {
		tag := uint64(seq - p.First + 1)
		if ok, err := tr.Track(1, tag, seq, checkStart); !ok || err != nil {
			t.Fatal(ok, err)
		}
		l.Published(seq, true)
		pend, _ := tr.Settle(1, tag)
		if err := l.Settle(pend.Seq, true); err != nil {
			t.Fatal(err)
		}
	}
	for _, seq := range deliver {
		l.DeliveredAttempt(l.MessageID(seq), false, 1)
	}
	counts, ids, _ := l.Reconcile(p.Drain)
	l.RecordTo(nil)
	if err := verdict.CloseHistory(w, l, verdict.Trailer{Drained: p.Drain}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "history-0.bin.gz"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	res := loadTestResult(t, baselineFile)
	m := res.Modes[0]
	m.Mode, m.Queue, m.Counts, m.IDs, m.History = scenario.ConfirmWindow, "q", counts, ids, "history-0.bin.gz"
	m.Verdict = scenario.Verdict{Status: scenario.Pass}
	res.Modes, res.Verdict, res.Scenario, res.Messages, res.LoadPart = []scenario.ModeResult{m}, m.Verdict, "s", messages, &p
	res.SchemaVersion, res.MigratedFrom, res.NotRecorded = scenario.SchemaVersion, 0, nil
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "result.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func checkCmd(t *testing.T, dirs ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Execute(context.Background(), append([]string{"check"}, dirs...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestCheckSplitRun: check merges three load parts (ids 0–2, 3–5, 6–9,
// each numbering its tags from 1) and the drain into one ledger: every id
// reconciles and the run passes. Without part 2's folder the verdict is
// inconclusive (exit 3) and names the part and its ids; the drain's
// deliveries of them are set aside, not unexpected, and nothing is lost.
// Without the drain, nothing is known delivered: inconclusive.
func TestCheckSplitRun(t *testing.T) {
	root := t.TempDir()
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	p1, p2, p3 := writeSplitFolder(t, root, 1, 3), writeSplitFolder(t, root, 2, 3), writeSplitFolder(t, root, 3, 3)
	drain := writeSplitFolder(t, root, 0, 3, all...)

	code, out, errOut := checkCmd(t, p1, p2, p3, drain)
	want := "confirm-window: split run r1, 3 of 3 load parts merged with the drain: sent 10, confirmed 10, delivered 10, lost 0, in doubt 0, unconfirmed missing 0, duplicates 0, unexpected 0: pass\n"
	if code != ExitPass || out != want || errOut != "" {
		t.Errorf("all parts: exit %d, stdout %q, stderr %q; want 0, %q", code, out, errOut, want)
	}

	code, out, errOut = checkCmd(t, p1, p3, drain)
	want = "confirm-window: split run r1, 2 of 3 load parts merged with the drain: sent 7, confirmed 7, delivered 7, lost 0, in doubt 0, unconfirmed missing 0, duplicates 0, unexpected 0: inconclusive\n" +
		"  part 2/3 missing: ids q-3–5 not accounted (the drain's 3 deliveries of them set aside)\n"
	if code != ExitInconclusive || out != want || errOut != "rmqtorture: split run r1: inconclusive\n" {
		t.Errorf("part 2 missing: exit %d, stdout %q, stderr %q; want 3, %q", code, out, errOut, want)
	}

	code, out, _ = checkCmd(t, p1, p2, p3)
	if code != ExitInconclusive || !strings.Contains(out, "3 of 3 load parts merged, without the drain: sent 10, confirmed 0, delivered 0, lost 0") || !strings.Contains(out, "the drain's folder was not given: no delivery is known") {
		t.Errorf("no drain: exit %d, stdout %q; want 3, nothing lost, the drain named", code, out)
	}
}

// TestCheckSplitRunBadFolders: folders of two runs, a part given twice, two
// drains, and a whole run among parts are bad input (exit 2).
func TestCheckSplitRunBadFolders(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	p1, p2, drain := writeSplitFolder(t, root, 1, 2), writeSplitFolder(t, root, 2, 2), writeSplitFolder(t, root, 0, 2)
	p1again, drain2 := writeSplitFolder(t, other, 1, 2), writeSplitFolder(t, other, 0, 2)
	whole := writeCheckRun(t)
	otherRun := writeSplitFolder(t, t.TempDir(), 2, 2)
	res, err := loadResult(filepath.Join(otherRun, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	res.LoadPart.RunID = "r2"
	b, _ := json.Marshal(res)
	if err := os.WriteFile(filepath.Join(otherRun, "result.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dirs []string
		want string
	}{
		{[]string{p1, otherRun, drain}, "rmqtorture: " + otherRun + " is of split run r2, " + p1 + " of split run r1: give the folders of one run\n"},
		{[]string{p1, p2, p1again, drain}, "rmqtorture: " + p1 + " and " + p1again + " are both part 1/2 of split run r1\n"},
		{[]string{p1, p2, drain, drain2}, "rmqtorture: " + drain + " and " + drain2 + " are both the drain of split run r1\n"},
		{[]string{p1, p2, whole}, "rmqtorture: " + whole + " is a whole run, not a part of split run r1: check it on its own\n"},
	} {
		code, out, errOut := checkCmd(t, c.dirs...)
		if code != ExitUsage || out != "" || errOut != c.want {
			t.Errorf("check %v: exit %d, stdout %q, stderr %q; want 2, %q", c.dirs, code, out, errOut, c.want)
		}
	}
}

// TestCheckSplitRunRefusesForeignHistories: a part's result.json is a file
// anyone may have edited. A history named outside its run folder
// ("../…", even a genuine history of the same part copied there) and a
// history that records another mode than the one result.json names are
// bad input (exit 2), as for a whole run, not read nor merged.
func TestCheckSplitRunRefusesForeignHistories(t *testing.T) {
	root := t.TempDir()
	p1, p2, drain := writeSplitFolder(t, root, 1, 2), writeSplitFolder(t, root, 2, 2), writeSplitFolder(t, root, 0, 2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	outside := t.TempDir()
	h, err := os.ReadFile(filepath.Join(p1, "history-0.bin.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "h.bin.gz"), h, 0o644); err != nil {
		t.Fatal(err)
	}
	edit := func(dir string, change func(*scenario.ModeResult)) {
		t.Helper()
		res, err := loadResult(filepath.Join(dir, "result.json"))
		if err != nil {
			t.Fatal(err)
		}
		change(&res.Modes[0])
		b, _ := json.Marshal(res)
		if err := os.WriteFile(filepath.Join(dir, "result.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rel, err := filepath.Rel(p1, filepath.Join(outside, "h.bin.gz"))
	if err != nil {
		t.Fatal(err)
	}
	edit(p1, func(m *scenario.ModeResult) { m.History = rel })
	code, out, errOut := checkCmd(t, p1, p2, drain)
	want := "rmqtorture: " + p1 + ": modes[0].history \"" + rel + "\": not a file name in the run folder\n"
	if code != ExitUsage || out != "" || errOut != want {
		t.Errorf("history outside the folder: exit %d, stdout %q, stderr %q; want 2, %q", code, out, errOut, want)
	}

	edit(p1, func(m *scenario.ModeResult) { m.History = "history-0.bin.gz" })
	edit(drain, func(m *scenario.ModeResult) { m.Mode = scenario.FireAndForget })
	code, out, errOut = checkCmd(t, p1, p2, drain)
	want = "rmqtorture: " + filepath.Join(drain, "history-0.bin.gz") + ": the history records mode \"confirm-window\", result.json names \"fire-and-forget\" for it\n"
	if code != ExitUsage || out != "" || errOut != want {
		t.Errorf("mode differs: exit %d, stdout %q, stderr %q; want 2, %q", code, out, errOut, want)
	}
}
