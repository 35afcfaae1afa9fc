package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// applyFlags loads a shipped scenario and applies args to it, and the
// RMQTORTURE_* variables of the flags args lacks, as run does.
func applyFlags(t *testing.T, name string, args ...string) (*scenario.Scenario, []string, error) {
	t.Helper()
	f, err := scenario.LoadFile("../scenarios.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Find("../scenarios.yaml", name)
	if err != nil {
		t.Fatal(err)
	}
	sc := *s
	o := &runOpts{}
	c := newRunWith(&globalOpts{}, o)
	c.SetErr(&bytes.Buffer{})
	if err := c.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if err := flagsFromEnv(c); err != nil {
		t.Fatal(err)
	}
	w, err := o.apply(c, "../scenarios.yaml", &sc)
	return &sc, w, err
}

// Every setting flag lands in its own field, and only there.
func TestSettingFlagsSetTheScenario(t *testing.T) {
	s, _, err := applyFlags(t, "kill-mid-burst", "--rate", "2500", "--size", "512", "--publishers", "4",
		"--consumers", "3", "--prefetch", "50", "--kill-at", "25%", "--down", "2s", "--queue-type", "classic")
	if err != nil {
		t.Fatal(err)
	}
	k := s.Faults[0]
	switch {
	case s.Load.Rate != 2500, *s.Load.MessageSizeBytes != 512, s.Load.Publishers != 4:
		t.Errorf("load: rate %g, size %d, publishers %d", s.Load.Rate, *s.Load.MessageSizeBytes, s.Load.Publishers)
	case s.Consumers != scenario.Consumers{Count: 3, Prefetch: 50, AckEvery: 1, OnDelivery: scenario.ConsumerAck}:
		t.Errorf("consumers %+v", s.Consumers)
	case k.PublishedPercent == nil || *k.PublishedPercent != 25 || k.Published != nil || k.Down.D() != 2*time.Second:
		t.Errorf("kill: %s, down %s", k.Trigger(), k.Down.D())
	case s.Queue.Type != scenario.Classic:
		t.Errorf("queue type %s", s.Queue.Type)
	}
	// A count replaces a percent trigger; consumers added alone get the
	// file's defaults.
	s, _, err = applyFlags(t, "kill-mid-burst", "--kill-at", "10000", "--consumers", "2")
	if err != nil {
		t.Fatal(err)
	}
	if k := s.Faults[0]; k.Trigger() != "10000 published" || k.PublishedPercent != nil {
		t.Errorf("kill at %s", k.Trigger())
	}
	if (s.Consumers != scenario.Consumers{Count: 2, Prefetch: 100, AckEvery: 1, OnDelivery: scenario.ConsumerAck}) {
		t.Errorf("consumers %+v", s.Consumers)
	}
	// --consumers 0 takes a scenario's live consumers and their settings out.
	s, _, err = applyFlags(t, "consumer-crash", "--consumers", "0", "--mode", "confirm-window")
	if err == nil || !strings.Contains(err.Error(), "crash-consumer needs live consumers") {
		t.Errorf("consumer-crash --consumers 0: %v, want crash-consumer refused", err)
	}
}

// --duration at --rate sizes the burst (PerfTest's and omq's -z): rate ×
// duration orders; the scenario's own trigger keeps its share.
func TestDurationSizesTheBurst(t *testing.T) {
	s, _, err := applyFlags(t, "kill-mid-burst", "-r", "2000", "-z", "30s")
	if err != nil {
		t.Fatal(err)
	}
	if s.Load.Messages != 60000 || s.Load.Rate != 2000 || s.Faults[0].Trigger() != "50% published" {
		t.Errorf("messages %d, rate %g, kill at %s; want 60000 at 2000 msg/s, at 50%% published", s.Load.Messages, s.Load.Rate, s.Faults[0].Trigger())
	}
	s, _, err = applyFlags(t, "kill-mid-burst", "--rate", "333", "--duration", "1.5s")
	if err != nil || s.Load.Messages != 500 {
		t.Errorf("333 msg/s for 1.5s: %v, %d orders; want 500 (499.5 rounded)", err, s.Load.Messages)
	}
}

// --uri takes the fault steps out, with the expectations that describe
// their outcome, and says so; a scenario without faults keeps its
// expectations.
func TestURITakesFaultsOut(t *testing.T) {
	s, w, err := applyFlags(t, "close-connections", "--uri", "amqp://alice:Pw0rdX@127.0.0.1:5672/vh")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`no fault injected: rmqtorture did not start this broker, so it only published, drained and judged; scenario "close-connections"'s fault steps were not run (close-connections at 5% published)`,
		`the expectations of scenario "close-connections" are not checked: they describe the outcome of its fault steps, which --uri does not run; a lost confirmed message still fails the run`,
	}
	if !slices.Equal(w, want) || len(s.Faults) != 0 || len(s.Expect.Modes) != 0 {
		t.Errorf("warnings %q, faults %d, expectations %d; want %q and none", w, len(s.Faults), len(s.Expect.Modes), want)
	}
	s, w, err = applyFlags(t, "unroutable-every-nth", "--uri", "amqp://alice:Pw0rdX@127.0.0.1:5672/vh")
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 1 || len(s.Expect.Modes) != 3 {
		t.Errorf("warnings %q, expectations %d; want the one no-fault line and 3", w, len(s.Expect.Modes))
	}
}

// No refusal of a --uri quotes its password, anywhere on stderr.
func TestURIRefusalsHidePassword(t *testing.T) {
	n := 0
	docker := dockerCounter(t)
	for _, tc := range flagCases() {
		if !slices.ContainsFunc(tc.args, func(a string) bool { return strings.Contains(a, "Pw") }) {
			continue
		}
		n++
		dir := t.TempDir()
		writeFiles(t, dir, tc.files)
		t.Chdir(dir)
		var stdout, stderr bytes.Buffer
		code := Execute(context.Background(), tc.args, &stdout, &stderr)
		if code != ExitUsage || strings.Contains(stdout.String()+stderr.String(), "Pw0rdX") || strings.Contains(stderr.String(), "Pw#0rdX") {
			t.Errorf("%s: exit %d, output %q", tc.name, code, stdout.String()+stderr.String())
		}
	}
	if n < 10 || docker.Load() != 0 {
		t.Fatalf("%d --uri cases, %d Docker contacts; want ≥ 10 and none", n, docker.Load())
	}
}

// A --uri run of a fault scenario against a broker that does not answer:
// no Docker contact, no fault, the reports say so, the password is in no
// output and no file.
func TestURIRunWithoutDocker(t *testing.T) {
	docker := dockerCounter(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	port := freeLocalPort(t) // nothing listens: the login never succeeds
	dir := t.TempDir()
	t.Chdir(dir)
	writeFiles(t, dir, map[string]string{"k.yaml": scenarioHead + "    broker: {ready_timeout: 1s}\n    load: {messages: 100}\n    faults: [{action: kill, published_percent: 50}]\n"})
	uri := "amqp://alice:Pw0rdX@127.0.0.1:" + strconv.Itoa(port) + "/v%2Fh"
	var stdout, stderr bytes.Buffer
	code := Execute(context.Background(), []string{"run", "s", "-f", "k.yaml", "--out", "out", "--summary-file", "sum.md", "--uri", uri}, &stdout, &stderr)
	if code != ExitInconclusive || docker.Load() != 0 {
		t.Fatalf("exit %d, %d Docker contacts; want %d and none\n%s", code, docker.Load(), ExitInconclusive, stderr.String())
	}
	runs, _ := filepath.Glob("out/s-*")
	if len(runs) != 1 {
		t.Fatalf("run folders %q", runs)
	}
	var res scenario.Result
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(runs[0], "result.json"))), &res); err != nil {
		t.Fatal(err)
	}
	shown := "amqp://alice:xxxxx@127.0.0.1:" + strconv.Itoa(port) + "/v%2Fh"
	if res.URI != shown || res.FaultsInjected == nil || *res.FaultsInjected || res.Container != "" || res.Image != "" {
		t.Errorf("uri %q, faults_injected %v, container %q, image %q; want %q, false and none", res.URI, res.FaultsInjected, res.Container, res.Image, shown)
	}
	if want := "the broker at 127.0.0.1:" + strconv.Itoa(port) + ", vhost v/h did not accept an AMQP login within 1s"; !strings.HasPrefix(res.Error, want) {
		t.Errorf("error %q, want it to start %q", res.Error, want)
	}
	report := readFile(t, filepath.Join(runs[0], "report.md"))
	outputs := map[string]string{"stdout": stdout.String(), "stderr": stderr.String(), "report.md": report,
		"result.json": readFile(t, filepath.Join(runs[0], "result.json")), "summary": readFile(t, "sum.md")}
	for name, text := range outputs {
		if strings.Contains(text, "Pw0rdX") {
			t.Errorf("%s holds the password", name)
		}
		// The headline wraps its warnings at 100 columns: compare words.
		if name != "stderr" && !strings.Contains(strings.Join(strings.Fields(text), " "), `fault steps were not run (kill at 50% published, down 5s)`) {
			t.Errorf("%s does not say the kill was not injected", name)
		}
	}
	if !strings.Contains(report, "at `"+shown+"` (named with --uri: not started by rmqtorture, no fault injected)") {
		t.Errorf("report.md does not name the broker by its redacted URI")
	}
}

// The command line in result.json never carries the password, whatever
// its characters.
func TestMarkExternalRedactsCommand(t *testing.T) {
	o := &runOpts{uri: "amqp://alice:it's'pw@127.0.0.1:5672/vh"}
	ut, err := o.external()
	if err != nil {
		t.Fatal(err)
	}
	res := &scenario.Result{Command: "rmqtorture run baseline --uri " + o.uri + " --messages 10"}
	markExternal(ut, res, false)
	want := "rmqtorture run baseline --uri amqp://alice:xxxxx@127.0.0.1:5672/vh --messages 10"
	if res.Command != want || res.URI != "amqp://alice:xxxxx@127.0.0.1:5672/vh" {
		t.Fatalf("command %q, uri %q; want %q", res.Command, res.URI, want)
	}
}

// RMQTORTURE_URI stands for --uri when the flag is absent: its refusals
// hide the password as the flag's do, and a run with it contacts no Docker
// Engine (the broker at a dead port never answers: inconclusive).
func TestURIFromEnvironment(t *testing.T) {
	docker := dockerCounter(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	port := freeLocalPort(t)
	dir := t.TempDir()
	t.Chdir(dir)
	writeFiles(t, dir, map[string]string{"k.yaml": scenarioHead + "    broker: {ready_timeout: 1s}\n    load: {messages: 100}\n"})
	t.Setenv("RMQTORTURE_URI", "amqp://alice:Pw0rdX@127.0.0.1:"+strconv.Itoa(port)+"/")
	var stdout, stderr bytes.Buffer
	code := Execute(context.Background(), []string{"run", "s", "-f", "k.yaml", "--port", "5000"}, &stdout, &stderr)
	want := "rmqtorture: RMQTORTURE_URI and --port: RMQTORTURE_URI names a running broker"
	if code != ExitUsage || !strings.HasPrefix(stderr.String(), want) || strings.Contains(stdout.String()+stderr.String(), "Pw0rdX") {
		t.Errorf("with --port: exit %d, stderr %q; want %d, %q…", code, stderr.String(), ExitUsage, want)
	}
	stdout.Reset()
	stderr.Reset()
	code = Execute(context.Background(), []string{"run", "s", "-f", "k.yaml", "--out", "out"}, &stdout, &stderr)
	if code != ExitInconclusive || docker.Load() != 0 || strings.Contains(stdout.String()+stderr.String(), "Pw0rdX") {
		t.Errorf("run: exit %d, %d Docker contacts, output %q; want %d, none, no password", code, docker.Load(), stdout.String()+stderr.String(), ExitInconclusive)
	}
}

// Every flag also comes from its RMQTORTURE_* variable, as if given: the
// scenario gives way to it, and the command line beats it.
func TestEnvironmentSetsFlags(t *testing.T) {
	t.Setenv("RMQTORTURE_RATE", "2500")
	t.Setenv("RMQTORTURE_KILL_AT", "25%")
	t.Setenv("RMQTORTURE_QUEUE_TYPE", "classic")
	t.Setenv("RMQTORTURE_PUBLISHERS", "4")
	sc, _, err := applyFlags(t, "kill-mid-burst", "--publishers", "2")
	if err != nil {
		t.Fatal(err)
	}
	if k := sc.Faults[0]; sc.Load.Rate != 2500 || sc.Queue.Type != scenario.Classic || sc.Load.Publishers != 2 ||
		k.PublishedPercent == nil || *k.PublishedPercent != 25 {
		t.Errorf("rate %g, queue type %s, publishers %d (the flag's 2, not the variable's 4), kill at %s", sc.Load.Rate, sc.Queue.Type, sc.Load.Publishers, k.Trigger())
	}
	if got := flagEnv("broker-address"); got != "RMQTORTURE_BROKER_ADDRESS" {
		t.Errorf("flagEnv(broker-address) = %s", got)
	}
}
