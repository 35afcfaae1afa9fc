package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/reports"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// TestImagesSideBySide runs a small no-fault scenario (testdata/images.yaml:
// 200 orders, confirm-each) on RabbitMQ 3.10.8 and 4.0.5, one broker at a
// time, in one invocation: each run has its own folder and result.json, and
// one versions report puts the two side by side with each column's exact
// counts and broker version; no container is left; and compare reads the
// two results as a baseline and a candidate on different brokers.
func TestImagesSideBySide(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker images")
	}
	images := []string{"rmqtorture/rabbitmq:3.10-bookworm", "rmqtorture/rabbitmq:4.0-trixie"}
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, "run", "small", "-f", "testdata/images.yaml", "--out", out, "--images", strings.Join(images, ","))
	if code != ExitPass {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	path := versionsResult(stdout)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("versions.json: %v\n%s", err, stdout)
	}
	if err := reports.ValidateVersions(data); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), "versions.md")); err != nil {
		t.Fatal(err)
	}
	var v reports.Versions
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Columns) != 2 || v.Columns[0].Name != "3.10.8" || v.Columns[0].Image != images[0] || v.Columns[1].Name != "4.0.5" || v.Columns[1].Image != images[1] {
		t.Fatalf("columns %+v", v.Columns)
	}
	// Each image's features, as its broker listed them: 3.10 has no list
	// of deprecated features; 4.0.5 permits non-exclusive transient queues
	// by default and has removed classic queue mirroring.
	c310, c40 := v.Columns[0].Features, v.Columns[1].Features
	if c310 == nil || c310.FeatureFlags["quorum_queue"] != "enabled" || c310.DeprecatedFeatures != nil ||
		c40 == nil || c40.FeatureFlags["quorum_queue"] != "enabled" || c40.DeprecatedFeatures["transient_nonexcl_queues"] != "permitted_by_default" || c40.DeprecatedFeatures["classic_queue_mirroring"] != "removed" {
		t.Fatalf("features: 3.10 %+v, 4.0 %+v", c310, c40)
	}
	vmd, err := os.ReadFile(filepath.Join(filepath.Dir(path), "versions.md"))
	if err != nil || !regexp.MustCompile(`\| deprecated: transient_nonexcl_queues +\| +no list \| +permitted_by_default \|`).Match(vmd) {
		t.Fatalf("versions.md lacks the deprecated feature row (%v):\n%s", err, vmd)
	}
	if v.Verdict.Status != "pass" || len(v.Scenarios) != 1 || v.Scenarios[0].Scenario != "small" {
		t.Fatalf("verdict %+v, scenarios %d", v.Verdict, len(v.Scenarios))
	}
	s := v.Scenarios[0]
	for i, run := range s.Runs {
		if run == nil {
			t.Fatalf("no run on %s", images[i])
		}
		res := readResultFile(t, filepath.Join(run.Dir, "result.json"))
		if res.Image != images[i] || res.BrokerVersion != v.Columns[i].BrokerVersion || !strings.HasSuffix(res.BrokerVersion, " "+v.Columns[i].Name) || run.BrokerVersion != res.BrokerVersion || res.RunID != run.RunID {
			t.Errorf("run %d: result image %q version %q run %q, versions.json %+v", i, res.Image, res.BrokerVersion, res.RunID, run)
		}
		if _, err := os.Stat(filepath.Join(run.Dir, "report.md")); err != nil {
			t.Error(err)
		}
		noLeftovers(t, run.RunID)
	}
	if s.Runs[0].Dir == s.Runs[1].Dir {
		t.Fatalf("both runs wrote %s", s.Runs[0].Dir)
	}
	checkCompareAcrossVersions(t, images[0], images[1], []string{filepath.Join(s.Runs[0].Dir, "result.json"), filepath.Join(s.Runs[1].Dir, "result.json")})
	want := map[string][]string{"sent": {"200", "200"}, "confirmed": {"200", "200"}, "lost": {"0", "0"}, "in_doubt": {"0", "0"},
		"nacked": {"0", "0"}, "returned": {"0", "0"}, "duplicates": {"0", "0"}, "delivered": {"200", "200"}, "verdict": {"pass", "pass"}}
	for _, r := range s.Rows {
		if w, ok := want[r.Field]; ok {
			if r.Group != "confirm-each" || !slices.Equal(r.Texts, w) {
				t.Errorf("%s %s: %v, want %v", r.Group, r.Field, r.Texts, w)
			}
			delete(want, r.Field)
		}
	}
	if len(want) > 0 {
		t.Errorf("rows missing: %v", want)
	}
	// The terminal table: one column per version, both runs' verdicts.
	for _, line := range []string{`(?m)^ small +3\.10\.8 +4\.0\.5$`, `(?m)^ confirm-each +sent +200 +200$`, `(?m)^ +lost +0 +0$`, `(?m)^ small +PASS +PASS$`, `(?m)^verdict: PASS$`} {
		if !regexp.MustCompile(line).MatchString(stdout) {
			t.Errorf("stdout lacks %s:\n%s", line, stdout)
		}
	}
}

// readResultFile reads and validates one run's result.json.
func readResultFile(t *testing.T, path string) *scenario.Result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := reports.Decode(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

// TestImagesUnstatedBehaviourFails runs retry-unscoped (testdata/images.yaml)
// on RabbitMQ 3.10.8 and 4.0.5: each run passes its own expectations, but the
// parked copies' x-death count is 2 on 3.10.8 (it counts the deaths of a copy
// the client republished with its headers) and 1 on 4.0.5 (it does not:
// rabbitmq-server PR #11339). No version scope states that, so the versions
// report fails, naming the change, and run exits 1.
func TestImagesUnstatedBehaviourFails(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker images")
	}
	images := []string{"rmqtorture/rabbitmq:3.10-bookworm", "rmqtorture/rabbitmq:4.0-trixie"}
	code, stdout, stderr := runCLI(t, "run", "retry-unscoped", "-f", "testdata/images.yaml", "--out", t.TempDir(), "--images", strings.Join(images, ","))
	if code != ExitFail {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitFail, stdout, stderr)
	}
	for _, want := range []string{
		"retry-unscoped on RabbitMQ 3.10.8: PASS", "retry-unscoped on RabbitMQ 4.0.5: PASS",
		"rmqtorture: verdict: fail: a behaviour changed between broker versions that no version scope states (see What changed)",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// The consumer parked each copy itself: its x-death is the retry
	// queue's, so the reason says who put it there.
	if !regexp.MustCompile(`(?m)^ +dead-letter reason +parked +parked$`).MatchString(stdout) {
		t.Errorf("stdout lacks the dead-letter reason row (parked on both):\n%s", stdout)
	}
	flat := strings.Join(strings.Fields(stdout), " ")
	for _, want := range []string{
		"- retry-unscoped · confirm-window · x-death count at park: 2 on 3.10.8, 1 on 4.0.5: NOT STATED by any version scope: fails",
		"verdict: FAIL - retry-unscoped · confirm-window · x-death count at park: 2 on 3.10.8, 1 on 4.0.5: a change of behaviour no version scope states (expect.versions)",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

// TestImagesAllHadBeforeTheFirstRun: with --images, an image the engine
// lacks (rmqtorture/* is published nowhere; its official stand-in, from a
// registry address where nothing listens, cannot be had either) stops the
// invocation before the first image's run starts: exit 4, nothing in
// --out, no container.
func TestImagesAllHadBeforeTheFirstRun(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker")
	}
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, "run", "small", "-f", "testdata/images.yaml", "--out", out,
		"--images", "rmqtorture/rabbitmq:4.0-trixie,rmqtorture/rabbitmq:9.9-nope", "--official-registry", "127.0.0.1:9", "--log-format", "text")
	if code != ExitError || stdout != "" ||
		!strings.Contains(stderr, `rmqtorture: rmqtorture/rabbitmq:9.9-nope is not in the Docker Engine, and its official stand-in could not be had: broker image missing: "127.0.0.1:9/rabbitmq:9.9" is not in the local Docker Engine`) ||
		!strings.Contains(stderr, `pulling "127.0.0.1:9/rabbitmq:9.9" failed: `) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if entries, err := os.ReadDir(out); err != nil || len(entries) != 0 {
		t.Fatalf("--out holds %v (%v): no run should have started", entries, err)
	}
	if strings.Contains(stderr, "broker container started") {
		t.Fatalf("a broker was started:\n%s", stderr)
	}
}

// TestRetryCountXDeathAcrossVersions runs the shipped retry-count-x-death
// on RabbitMQ 3.10.8 and 4.0.5: a consumer that holds the broker's x-death
// count against max_retries 3 parks every order after 3 retries on 3.10.8
// (x-death 3) and never reaches its limit on 4.0.5, where the count stays 1
// (rabbitmq-server#11331): rmqtorture cuts each loop at 30 retries and
// counts it. Both differences are stated by the scenario's version scopes,
// so the versions report names them with their source and passes.
func TestRetryCountXDeathAcrossVersions(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker images")
	}
	images := []string{"rmqtorture/rabbitmq:3.10-bookworm", "rmqtorture/rabbitmq:4.0-trixie"}
	code, stdout, stderr := runCLI(t, "run", "retry-count-x-death", "-f", "../scenarios.yaml", "--out", t.TempDir(), "--images", strings.Join(images, ","))
	if code != ExitPass {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	flat := strings.Join(strings.Fields(stdout), " ")
	for _, want := range []string{
		"- retry-count-x-death · confirm-window · retries at park: 3 on 3.10.8, 30 on 4.0.5: expected (because: from 4.0 x-headers belong to the broker",
		"- retry-count-x-death · confirm-window · x-death count at park: 3 on 3.10.8, 1 on 4.0.5: expected (because:",
		"(rabbitmq-server#11331, PR #11339 for 3.13.x only)",
		"verdict: PASS",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	path := versionsResult(stdout)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("versions.json: %v", err)
	}
	v, err := reports.DecodeVersions(data)
	if err != nil || len(v.Scenarios) != 1 {
		t.Fatalf("%s: %v", path, err)
	}
	for i, cut := range []int{0, 100} {
		run := v.Scenarios[0].Runs[i]
		res := readResultFile(t, filepath.Join(run.Dir, "result.json"))
		c := res.Modes[0].Consumers
		if c == nil || c.RetryLoopsCut != cut || c.Parked != 100 {
			t.Errorf("%s: consumers %+v, want %d loops cut and 100 parked", images[i], c, cut)
		}
		noLeftovers(t, run.RunID)
	}
}

// versionsResult is the versions.json path a run of several images
// printed ("" when it printed none).
func versionsResult(stdout string) string {
	var path string
	for _, line := range strings.Split(stdout, "\n") {
		if p, ok := strings.CutPrefix(line, "versions result: "); ok {
			path = p
		}
	}
	return path
}
