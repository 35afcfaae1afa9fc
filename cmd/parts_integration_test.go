package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// splitPassword is bob's password, distinctive so that any trace of it in
// an output is found.
const splitPassword = "Kx4-split-Secret-27q"

// TestSplitRunAgainstURI: one broker (a user's, reached with --uri), four
// `run --load-only --part K/4` processes publishing 1,000 ids each at once
// under one --run-id, then `run --drain-only --parts 4`, then `check` on
// the five folders: every one of the 4,000 ids reconciles (sent,
// confirmed, delivered 4,000, nothing lost, in doubt or duplicated), and
// the merged counts and verdict equal a single-process run's of the same
// 4,000 ids. check without part 3's folder is inconclusive (exit 3) and
// names part 3/4 and its ids, never a loss. The password is in no output
// and no file; the drain leaves no queue behind.
func TestSplitRunAgainstURI(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker image")
	}
	cli := dockerClient(t)
	ctx := context.Background()
	ctr, uri := startUserBrokerAs(t, cli, "bob", splitPassword)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	const n, parts = 4000, 4
	const runID = "split-test-1"
	scen := []string{"run", "baseline", "-f", "../scenarios.yaml", "--mode", "confirm-window", "--messages", strconv.Itoa(n), "--uri", uri}
	outputs := map[string]string{}
	var mu sync.Mutex
	// run executes args with --out under a fresh folder and returns the
	// run folder it wrote.
	run := func(name string, args ...string) string {
		out := t.TempDir()
		var stdout, stderr bytes.Buffer
		code := Execute(context.Background(), append(args, "--out", out), &stdout, &stderr)
		dirs, _ := filepath.Glob(filepath.Join(out, "*"))
		mu.Lock()
		defer mu.Unlock()
		outputs[name+" stdout"], outputs[name+" stderr"] = stdout.String(), stderr.String()
		if code != ExitPass || len(dirs) != 1 {
			t.Errorf("%s: exit %d, %d run folders; want a pass and one\n%s%s", name, code, len(dirs), stderr.String(), stdout.String())
			return ""
		}
		for _, f := range []string{"result.json", "report.md"} {
			outputs[name+" "+f] = readFile(t, filepath.Join(dirs[0], f))
		}
		return dirs[0]
	}

	start := time.Now()
	folders := make([]string, parts)
	var wg sync.WaitGroup
	for k := 1; k <= parts; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			folders[k-1] = run(fmt.Sprintf("part %d", k), append(scen, "--load-only", "--part", fmt.Sprintf("%d/%d", k, parts), "--run-id", runID)...)
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	loaded := time.Since(start)
	for k, dir := range folders {
		res, err := loadResult(filepath.Join(dir, "result.json"))
		if err != nil {
			t.Fatal(err)
		}
		first, end := metrics.PartRange(n, k+1, parts)
		want := metrics.Part{RunID: runID, Index: k + 1, Parts: parts, First: first, End: end}
		m := res.Modes[0]
		if res.LoadPart == nil || *res.LoadPart != want || m.Sent != end-first || m.Unverified != end-first || m.Delivered != 0 || m.InDoubt != 0 || res.Verdict.Status != scenario.Pass {
			t.Errorf("part %d: load_part %+v, sent %d, unverified %d, delivered %d, in doubt %d, verdict %+v; want %+v, %d sent and unverified, nothing delivered, pass",
				k+1, res.LoadPart, m.Sent, m.Unverified, m.Delivered, m.InDoubt, res.Verdict, want, end-first)
		}
	}
	drain := run("drain", append(scen, "--drain-only", "--parts", strconv.Itoa(parts), "--run-id", runID)...)
	if drain == "" {
		t.FailNow()
	}
	// The drain alone published nothing: each of its deliveries is of an id
	// it never sent, so its own result counts all n as unexpected (only
	// check's merge below accounts them).
	if res, err := loadResult(filepath.Join(drain, "result.json")); err != nil {
		t.Fatal(err)
	} else if m := res.Modes[0]; m.Unexpected != n || m.Sent != 0 {
		t.Errorf("drain-only result: unexpected %d, sent %d; want %d unexpected, 0 sent", m.Unexpected, m.Sent, n)
	}
	t.Logf("4 load parts of %d messages at once: %s; the drain: %s", n/parts, loaded.Round(time.Millisecond), (time.Since(start) - loaded).Round(time.Millisecond))

	// check merges the five folders into one ledger and one verdict.
	all := append(append([]string{}, folders...), drain)
	code, out, errOut := checkCmd(t, all...)
	prefix := "rmqt." + runID + ".confirm-window-"
	want := fmt.Sprintf("confirm-window: split run %s, 4 of 4 load parts merged with the drain: sent %d, confirmed %d, delivered %d, lost 0, in doubt 0, unconfirmed missing 0, duplicates 0, unexpected 0: pass\n", runID, n, n, n)
	if code != ExitPass || out != want || errOut != "" {
		t.Errorf("check: exit %d, stdout %q, stderr %q; want 0, %q", code, out, errOut, want)
	}
	split, err := splitFolders(all)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := mergeSplitRun(split)
	if err != nil || len(merged) != 1 {
		t.Fatalf("merge: %v, %d bursts", err, len(merged))
	}

	// The same 4,000 ids from one process.
	single := run("single run", scen...)
	if single == "" {
		t.FailNow()
	}
	var whole scenario.Result
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(single, "result.json"))), &whole); err != nil {
		t.Fatal(err)
	}
	sm, mm := whole.Modes[0], merged[0].res
	if !reflect.DeepEqual(sm.Counts, mm.Counts) || !reflect.DeepEqual(sm.IDs, mm.IDs) || sm.Verdict.Status != mm.Verdict.Status || !reflect.DeepEqual(sm.Verdict.Reasons, mm.Verdict.Reasons) {
		t.Errorf("merged %+v %+v %+v\nsingle run %+v %+v %+v\nwant the same counts, ids and verdict", mm.Counts, mm.IDs, mm.Verdict, sm.Counts, sm.IDs, sm.Verdict)
	}

	// Without part 3: its ids are not accounted, and nothing is lost.
	code, out, errOut = checkCmd(t, folders[0], folders[1], folders[3], drain)
	want = fmt.Sprintf("confirm-window: split run %s, 3 of 4 load parts merged with the drain: sent 3000, confirmed 3000, delivered 3000, lost 0, in doubt 0, unconfirmed missing 0, duplicates 0, unexpected 0: inconclusive\n"+
		"  part 3/4 missing: ids %s2000–2999 not accounted (the drain's 1000 deliveries of them set aside)\n", runID, prefix)
	if code != ExitInconclusive || out != want || errOut != "rmqtorture: split run "+runID+": inconclusive\n" {
		t.Errorf("check without part 3: exit %d, stdout %q, stderr %q; want 3, %q", code, out, errOut, want)
	}
	outputs["check stdout"] = out

	for name, text := range outputs {
		if strings.Contains(text, splitPassword) {
			t.Errorf("%s holds the password", name)
		}
	}
	if q, err := ctr.Exec(ctx, "rabbitmqctl", "-q", "list_queues", "-p", "vh", "name"); err != nil || strings.Contains(q, "rmqt") {
		t.Errorf("queues left in vh: %q, %v", q, err)
	}
}
