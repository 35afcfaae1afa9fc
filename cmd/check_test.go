package cmd

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
	"github.com/rmqtorture/rmqtorture/verdict"
)

// assertCheckReproduces runs `rmqtorture check dir` and fails unless it
// re-judges every mode of the run exactly as result.json says (exit 0).
// Call it from every integration test's run.
func assertCheckReproduces(t *testing.T, dir string) {
	t.Helper()
	code, stdout, stderr := runCLI(t, "check", dir)
	if code != ExitPass {
		t.Fatalf("check %s: exit %d\n%s%s", dir, code, stdout, stderr)
	}
	if !strings.Contains(stdout, "counts, id ranges and verdict match result.json") {
		t.Fatalf("check %s printed no match:\n%s", dir, stdout)
	}
}

var checkStart = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// checkBurst plays a confirm-window burst of 8 ids into l as the publisher
// and the drain would: 0–4 acked (2 returned first), 5 nacked, 6 in doubt
// when epoch 1 closes, 7's publish call fails; 6 and 7 republished on epoch
// 2 and acked; every id but 5 delivered once, 4 from the dead-letter queue.
func checkBurst(t *testing.T, l *metrics.Ledger, tr *metrics.ConfirmTracker) {
	pub := func(e metrics.Epoch, tag uint64, seq int) {
		if ok, err := tr.Track(e, tag, seq, checkStart); !ok || err != nil {
			t.Fatal(ok, err)
		}
		l.Published(seq, true)
	}
	conf := func(e metrics.Epoch, tag uint64, ack bool) {
		p, ok := tr.Settle(e, tag)
		if !ok {
			t.Fatalf("tag %d", tag)
		}
		if err := l.Settle(p.Seq, ack); err != nil {
			t.Fatal(err)
		}
	}
	for seq := range 8 {
		pub(1, uint64(seq+1), seq)
	}
	tr.Settle(1, 8)
	l.PublishFailed(7, true)
	l.Returned(2)
	for tag := range uint64(5) {
		conf(1, tag+1, true)
	}
	conf(1, 6, false)
	for _, p := range tr.CloseEpoch(1) {
		l.MarkInDoubt(p.Seq)
	}
	pub(2, 1, 6)
	pub(2, 2, 7)
	conf(2, 1, true)
	conf(2, 2, true)
	for _, seq := range []int{0, 1, 2, 3, 6, 7} {
		l.DeliveredAttempt(l.MessageID(seq), false, 1)
	}
	l.DeadLettered(l.MessageID(4))
}

// writeCheckRun records checkBurst and writes a run folder: result.json
// with the burst judged as the engine judges it (expect duplicates: 0), and
// its history. It returns the folder.
func writeCheckRun(t *testing.T) string {
	dir := t.TempDir()
	zero := 0
	expect := scenario.Expect{Modes: map[scenario.Mode]scenario.ModeExpectations{scenario.ConfirmWindow: {Duplicates: &zero}}}
	f, err := os.Create(filepath.Join(dir, "history-0.bin.gz"))
	if err != nil {
		t.Fatal(err)
	}
	ev := verdict.Evidence{Header: verdict.Header{Mode: scenario.ConfirmWindow, Expect: expect},
		Trailer: verdict.Trailer{Drained: true, Observed: scenario.Observed{BlockedMS: 3.5}}}
	w, err := verdict.NewHistoryWriter(f, metrics.HistoryHeader{Prefix: "q-", Messages: 8, ConfirmMode: true, Start: checkStart}, ev.Header)
	if err != nil {
		t.Fatal(err)
	}
	l := metrics.NewLedger("q-", 8)
	l.RecordTo(w)
	checkBurst(t, l, metrics.NewConfirmTracker().ReportTo(l))
	var judged scenario.ModeResult
	verdict.Conclude(&judged, l, &ev, nil)
	l.RecordTo(nil)
	if err := verdict.CloseHistory(w, l, ev.Trailer); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if c := judged.Counts; judged.Verdict.Status != scenario.Pass || c.Confirmed != 6 || c.Returned != 1 || c.Nacked != 1 || c.DeadLettered != 1 || c.WentInDoubt != 2 {
		t.Fatalf("burst judged %+v, counts %+v", judged.Verdict, c)
	}
	res := loadTestResult(t, baselineFile)
	m := res.Modes[0]
	m.Mode, m.Queue, m.Counts, m.IDs, m.Verdict, m.History, m.BlockedMS = scenario.ConfirmWindow, "q", judged.Counts, judged.IDs, judged.Verdict, "history-0.bin.gz", 3.5
	res.Modes = []scenario.ModeResult{m}
	res.Messages = 8 // the history's burst
	res.Verdict = scenario.Overall(res.Modes)
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "result.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// editHistory rewrites dir's history through edit, which gets each record
// and returns the records to write in its place.
func editHistory(t *testing.T, dir string, edit func(metrics.HistoryRecord) []metrics.HistoryRecord) {
	rewriteHistory(t, dir, func(*verdict.Header) {}, edit)
}

// rewriteHistory rewrites dir's history with its header changed by header
// and each record replaced by what edit returns for it.
func rewriteHistory(t *testing.T, dir string, header func(*verdict.Header), edit func(metrics.HistoryRecord) []metrics.HistoryRecord) {
	path := filepath.Join(dir, "history-0.bin.gz")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := metrics.NewHistoryReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var ev verdict.Evidence
	if err := json.Unmarshal(r.HeaderJSON, &ev.Header); err != nil {
		t.Fatal(err)
	}
	header(&ev.Header)
	var buf bytes.Buffer
	w, err := verdict.NewHistoryWriter(&buf, r.Header, ev.Header)
	if err != nil {
		t.Fatal(err)
	}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, out := range edit(rec) {
			w.Write(out)
		}
	}
	if err := json.Unmarshal(r.TrailerJSON(), &ev.Trailer); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(r.Trailer(), ev.Trailer); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheckReproducesRecordedRun(t *testing.T) {
	dir := writeCheckRun(t)
	code, stdout, stderr := runCLI(t, "check", dir)
	if want := "confirm-window: re-judged pass; counts, id ranges and verdict match result.json\n"; code != ExitPass || stdout != want {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout, stderr, want)
	}
}

func TestCheckDroppedAck(t *testing.T) {
	dir := writeCheckRun(t)
	dropped := false
	editHistory(t, dir, func(r metrics.HistoryRecord) []metrics.HistoryRecord {
		if r.Kind == metrics.HAck && r.Epoch == 1 && r.Tag == 1 && !dropped {
			dropped = true
			return nil
		}
		return []metrics.HistoryRecord{r}
	})
	code, stdout, _ := runCLI(t, "check", dir)
	// Id 0 is no longer confirmed: it stays in flight, counted in doubt.
	for _, want := range []string{"confirm-window: re-judged from history-0.bin.gz, differs from result.json:",
		"  confirmed: history 5, result.json 6", "  in_doubt: history 1, result.json 0", "  ids.in_doubt: history [0], result.json []"} {
		if !strings.Contains(stdout, want+"\n") {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if code != ExitFail {
		t.Fatalf("exit %d, want 1", code)
	}
}

func TestCheckDuplicatedDelivery(t *testing.T) {
	dir := writeCheckRun(t)
	editHistory(t, dir, func(r metrics.HistoryRecord) []metrics.HistoryRecord {
		if r.Kind == metrics.HDelivered && r.Seq == 3 {
			return []metrics.HistoryRecord{r, r}
		}
		return []metrics.HistoryRecord{r}
	})
	code, stdout, _ := runCLI(t, "check", dir)
	for _, want := range []string{"  duplicates: history 1, result.json 0", "  ids.duplicated: history [3], result.json []",
		"  verdict: history fail, result.json pass", `  verdict reasons: history ["duplicates 1, expected exactly 0"], result.json []`} {
		if !strings.Contains(stdout, want+"\n") {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if code != ExitFail {
		t.Fatalf("exit %d, want 1", code)
	}
}

func TestCheckBogusAckIsInconsistent(t *testing.T) {
	dir := writeCheckRun(t)
	editHistory(t, dir, func(r metrics.HistoryRecord) []metrics.HistoryRecord {
		if r.Kind == metrics.HDrainEnd {
			return []metrics.HistoryRecord{{Kind: metrics.HAck, Epoch: 2, Tag: 7}, r}
		}
		return []metrics.HistoryRecord{r}
	})
	code, stdout, _ := runCLI(t, "check", dir)
	if want := "  history inconsistency: basic.ack for delivery tag 7 on epoch 2, which carries no unconfirmed publish\n"; code != ExitFail || !strings.Contains(stdout, want) {
		t.Fatalf("exit %d, stdout %q; want 1 and %q", code, stdout, want)
	}
}

func TestCheckBadInput(t *testing.T) {
	truncated := writeCheckRun(t)
	hp := filepath.Join(truncated, "history-0.bin.gz")
	data, err := os.ReadFile(hp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hp, data[:len(data)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	badResult := writeCheckRun(t)
	if err := os.WriteFile(filepath.Join(badResult, "result.json"), []byte(`{"schema_version": 1`), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "nope")
	cases := []struct{ dir, want string }{
		{truncated, hp + ": history corrupt: "},
		{badResult, filepath.Join(badResult, "result.json") + ": "},
		{missing, missing + ": no such run folder"},
	}
	for _, tc := range cases {
		code, _, stderr := runCLI(t, "check", tc.dir)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("check %s: exit %d, stderr %q; want 2 and %q", tc.dir, code, stderr, tc.want)
		}
	}
}

// runDir is the run folder whose result path `run` printed.
func runDir(t *testing.T, stdout string) string {
	t.Helper()
	for _, line := range strings.Split(stdout, "\n") {
		if p, ok := strings.CutPrefix(line, "result: "); ok {
			return filepath.Dir(p)
		}
	}
	t.Fatalf("no result path printed:\n%s", stdout)
	return ""
}

// TestCheckRealRun runs a small kill scenario against the real broker end
// to end, then checks its run folder: one history per mode, re-judged as
// result.json says.
func TestCheckRealRun(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker image")
	}
	args := []string{"run", "kill-mid-burst", "-f", "../scenarios.yaml", "--out", t.TempDir(), "--messages", "1500", "--mode", "confirm-window,fire-and-forget"}
	if img := os.Getenv("RMQT_IMAGE"); img != "" {
		args = append(args, "--image", img)
	}
	code, stdout, stderr := runCLI(t, args...)
	if code != ExitPass {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := runDir(t, stdout)
	r := readResult(t, stdout)
	for i, m := range r.Modes {
		if want := fmt.Sprintf("history-%d.bin.gz", i); m.History != want {
			t.Fatalf("%s: history %q, want %q", m.Mode, m.History, want)
		}
	}
	assertCheckReproduces(t, dir)
	checkTimelineCSV(t, dir, r)
	// The report gives the broker's median restart, over both modes' kills.
	if md := readFile(t, filepath.Join(dir, "report.md")); !regexp.MustCompile(`\n- \*\*Broker restart:\*\* median \d+\.\d s from the container running again to an accepted AMQP login \(2× after kill\)\n`).MatchString(md) {
		t.Fatalf("report.md gives no median broker restart over the 2 kills:\n%s", md)
	}
	// compare reads the same real result as its own baseline: no regression.
	res := filepath.Join(dir, "result.json")
	if code, out, errOut := runCLI(t, "compare", res, res); code != ExitPass || !strings.Contains(out, "**No regression.**") || regressionLines(out) != nil {
		t.Fatalf("compare with itself: exit %d\n%s\n%s", code, out, errOut)
	}
}

// A history that records the queue deleted after the burst, before the
// drain delivered its ids, re-judges them as resurrected
// (rabbitmq-server#12366): check reads the delete from the history alone.
func TestCheckQueueDeletedResurrects(t *testing.T) {
	dir := writeCheckRun(t)
	inserted := false
	editHistory(t, dir, func(r metrics.HistoryRecord) []metrics.HistoryRecord {
		if (r.Kind == metrics.HDelivered || r.Kind == metrics.HDeadLettered) && !inserted {
			inserted = true
			return []metrics.HistoryRecord{{Kind: metrics.HQueueDeleted, BurstOver: true}, r}
		}
		return []metrics.HistoryRecord{r}
	})
	code, stdout, _ := runCLI(t, "check", dir)
	for _, want := range []string{
		"  confirmed: history 0, result.json 6",
		"  resurrected: history 7, result.json 0",
		"  ids.resurrected: history [0-4 6-7], result.json []",
		"  verdict: history fail, result.json pass",
		`  verdict reasons: history ["unexpected: 7 messages deleted with the queue by delete-queue were delivered after it was declared again (rabbitmq-server#12366)"], result.json []`,
	} {
		if !strings.Contains(stdout, want+"\n") {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if code != ExitFail {
		t.Fatalf("exit %d, want 1", code)
	}
}

// What a history's header says is printed without terminal codes: a mode
// given as a window-title escape reaches the terminal as plain text.
func TestCheckPrintsNoTerminalCodes(t *testing.T) {
	dir := writeCheckRun(t)
	rewriteHistory(t, dir, func(h *verdict.Header) { h.Mode = "\x1b]0;pwned\x07\u009d0;pwned\u009cconfirm-each" },
		func(r metrics.HistoryRecord) []metrics.HistoryRecord { return []metrics.HistoryRecord{r} })
	code, stdout, _ := runCLI(t, "check", dir)
	if want := "  mode: history confirm-each, result.json confirm-window\n"; code != ExitFail || !strings.Contains(stdout, want) {
		t.Fatalf("exit %d, stdout lacks %q:\n%q", code, want, stdout)
	}
	if strings.ContainsAny(stdout, "\x1b\x07\u009d\u009c") {
		t.Fatalf("terminal codes printed: %q", stdout)
	}
}

// checkTimelineCSV checks the run folder's timeline.csv against result.json:
// a row per mode and bucket, each mode's published and acked columns
// summing to its series' totals.
func checkTimelineCSV(t *testing.T, dir string, r *scenario.Result) {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(readFile(t, filepath.Join(dir, "timeline.csv")))).ReadAll()
	if err != nil || len(rows) == 0 || strings.Join(rows[0], ",") != "mode,bucket_start_ms,bucket_ms,published,republished,acked,nacked,returned,delivered,in_flight,reconnects,broker" {
		t.Fatalf("timeline.csv: %v, header %v", err, rows[:min(len(rows), 1)])
	}
	type sums struct{ rows, published, acked int }
	got := map[string]sums{}
	for _, row := range rows[1:] {
		p, _ := strconv.Atoi(row[3])
		a, _ := strconv.Atoi(row[5])
		s := got[row[0]]
		got[row[0]] = sums{s.rows + 1, s.published + p, s.acked + a}
	}
	for _, m := range r.Modes {
		want := sums{m.Series.Len(), 0, 0}
		for i := range m.Series.Len() {
			want.published += m.Series.Published[i]
			want.acked += m.Series.Acked[i]
		}
		if got[string(m.Mode)] != want || want.published < m.Sent {
			t.Errorf("timeline.csv %s: %+v, want %+v from result.json's series (sent %d)", m.Mode, got[string(m.Mode)], want, m.Sent)
		}
	}
}
