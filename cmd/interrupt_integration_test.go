package cmd

// The interrupt test: the real binary, run as a subprocess against a real
// broker, gets SIGINT at each phase of a run (before the broker is ready,
// mid-burst, broker down, recovering, draining, writing the report),
// SIGTERM, and SIGINT twice. After each: exit 130, result.json (valid,
// interrupted: true) and report.md written, and nothing of the run left in
// Docker (label org.rmqtorture.run=<run id>). -short skips it.

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"

	"github.com/rmqtorture/rmqtorture/broker/docker"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/reports"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// interruptScenarios: 3,000 orders at 1,000 msg/s through a window of 100,
// SIGKILL at 50% (1.5 s into the burst), down 3 s: every phase lasts long
// enough to be hit from the log. Its exact expectations hold for a whole
// burst only. "whole" is the same burst without the fault, for the phases
// after it (draining, writing), which need no restart.
const interruptScenarios = `version: 1
scenarios:
  - name: phases
    load: {messages: 3000, modes: [confirm-window], window: 100, rate: 1000}
    faults: [{action: kill, published_percent: 50, down: 3s}]
    expect:
      modes:
        confirm-window: {sent: 3000, confirmed: 3000, lost: 0, in_doubt: 0, min_went_in_doubt: 1}
  - name: cluster
    broker: {nodes: 3}
    queue: {settle_before_burst: 2s}
    load: {messages: 3000, modes: [confirm-window], window: 100, rate: 300}
    faults: [{action: partition, published_percent: 20, down: 30s}]
  - name: whole
    load: {messages: 3000, modes: [confirm-window], window: 100, rate: 1000}
    expect:
      modes:
        confirm-window: {sent: 3000, confirmed: 3000, lost: 0, in_doubt: 0}
`

// runProc is the rmqtorture binary running as a subprocess, its stderr read
// line by line.
type runProc struct {
	cmd    *exec.Cmd
	stdout strings.Builder
	mu     sync.Mutex
	lines  []string
	grew   chan struct{} // closed and replaced on every new line
	done   chan struct{} // closed once stderr is read to its end
	// signalled is when the last signal was sent.
	signalled time.Time
}

func startRunProc(t *testing.T, bin string, args ...string) *runProc {
	t.Helper()
	p := &runProc{cmd: exec.Command(bin, args...), grew: make(chan struct{}), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), textLogs) // it waits for log lines
	p.cmd.Stdout = &syncWriter{w: &p.stdout, mu: &p.mu}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			close(p.grew)
			p.grew = make(chan struct{})
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	return p
}

type syncWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// waitLine waits until a stderr line contains substr.
func (p *runProc) waitLine(t *testing.T, substr string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for seen := 0; ; {
		p.mu.Lock()
		for ; seen < len(p.lines); seen++ {
			if strings.Contains(p.lines[seen], substr) {
				p.mu.Unlock()
				return
			}
		}
		grew := p.grew
		p.mu.Unlock()
		select {
		case <-grew:
		case <-p.done:
			t.Fatalf("rmqtorture ended without logging %q:\n%s", substr, p.stderr())
		case <-deadline:
			t.Fatalf("no %q logged within %s:\n%s", substr, timeout, p.stderr())
		}
	}
}

func (p *runProc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

func (p *runProc) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	p.mu.Lock()
	p.signalled = time.Now()
	p.mu.Unlock()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *runProc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	exited := make(chan error, 1)
	go func() { <-p.done; exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		p.mu.Lock()
		t.Logf("exit %d, %s after the last signal", p.cmd.ProcessState.ExitCode(), time.Since(p.signalled).Round(time.Millisecond))
		p.mu.Unlock()
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		t.Fatalf("rmqtorture still running %s after the signal:\n%s", timeout, p.stderr())
		return -1
	}
}

// resultPath is the result.json the run printed.
func (p *runProc) resultPath(t *testing.T) string {
	t.Helper()
	p.mu.Lock()
	out := p.stdout.String()
	p.mu.Unlock()
	for _, line := range strings.Split(out, "\n") {
		if path, ok := strings.CutPrefix(line, "result: "); ok {
			return path
		}
	}
	t.Fatalf("no result path printed:\n%s\nstderr:\n%s", out, p.stderr())
	return ""
}

// interruptCase is one signal sequence at one phase; check looks at the
// result beyond what every case checks.
type interruptCase struct {
	name string
	// drive waits for the phase and sends the signals.
	drive func(t *testing.T, p *runProc)
	check func(t *testing.T, r *scenario.Result)
	// scenario of interruptScenarios to run ("phases" when empty).
	scenario string
	// fifo: --summary-file is a named pipe, read only after the signal
	// (drive is then the writing phase's own).
	fifo bool
}

// after waits for a log line, then d, then sends sig.
func after(line string, d time.Duration, sigs ...os.Signal) func(t *testing.T, p *runProc) {
	return func(t *testing.T, p *runProc) {
		p.waitLine(t, line, 2*time.Minute)
		time.Sleep(d)
		for i, s := range sigs {
			if i > 0 {
				time.Sleep(300 * time.Millisecond)
			}
			p.signal(t, s)
		}
	}
}

func modeReasons(t *testing.T, r *scenario.Result) string {
	t.Helper()
	if len(r.Modes) != 1 {
		t.Fatalf("%d modes, want 1", len(r.Modes))
	}
	return strings.Join(r.Modes[0].Verdict.Reasons, "\n")
}

// cutShort checks a mode interrupted before its burst ended: exact
// expectations not checked, nothing lost, inconclusive.
func cutShort(t *testing.T, r *scenario.Result) {
	t.Helper()
	m := r.Modes[0]
	reasons := modeReasons(t, r)
	for _, want := range []string{"not checked: interrupted: expect.modes.confirm-window sent 3000, confirmed 3000, lost 0, in_doubt 0, min_went_in_doubt 1", "interrupted before the burst completed"} {
		if !strings.Contains(reasons, want) {
			t.Errorf("mode reasons lack %q:\n%s", want, reasons)
		}
	}
	if strings.Contains(reasons, "expected exactly") || strings.Contains(reasons, "the burst ended first") {
		t.Errorf("an interrupted burst judged as if whole:\n%s", reasons)
	}
	if m.Verdict.Status != scenario.Inconclusive || m.Lost != 0 || m.Sent >= 3000 || m.ClassSum() != m.Sent {
		t.Errorf("verdict %s, lost %d, sent %d, classes %d", m.Verdict.Status, m.Lost, m.Sent, m.ClassSum())
	}
}

var interruptCases = []interruptCase{
	{name: "SIGINT before the broker is ready", drive: after("waiting for AMQP", 0, os.Interrupt),
		check: func(t *testing.T, r *scenario.Result) {
			if len(r.Modes) != 0 || !strings.HasPrefix(r.Error, "interrupted while waiting for the broker to accept an AMQP login on 127.0.0.1:") || r.DurationMS <= 0 {
				t.Errorf("modes %d, error %q, duration %.0f ms", len(r.Modes), r.Error, r.DurationMS)
			}
		}},
	{name: "SIGINT mid-burst before the fault", drive: after("burst started", 400*time.Millisecond, os.Interrupt),
		check: func(t *testing.T, r *scenario.Result) {
			cutShort(t, r)
			if want := "fault kill (50% published) never fired: interrupted before the fault"; !strings.Contains(modeReasons(t, r), want) {
				t.Errorf("reasons lack %q:\n%s", want, modeReasons(t, r))
			}
		}},
	{name: "SIGINT with the broker down", drive: after("fault applied", 0, os.Interrupt),
		check: func(t *testing.T, r *scenario.Result) {
			cutShort(t, r)
			// The fault under way was finished: the broker restarted, and
			// what was published drained.
			f := r.Modes[0].Faults
			if len(f) != 1 || f[0].Error != "" || f[0].Recovery == nil || f[0].Recovery.AMQPAcceptingMS == nil {
				t.Errorf("fault %+v: not recovered", f)
			}
		}},
	{name: "SIGINT while the broker recovers", drive: after("fault applied", 4*time.Second, os.Interrupt),
		check: func(t *testing.T, r *scenario.Result) {
			cutShort(t, r)
			if f := r.Modes[0].Faults; len(f) != 1 || f[0].Recovery == nil || f[0].Recovery.AMQPAcceptingMS == nil {
				t.Errorf("fault %+v: not recovered", f)
			}
		}},
	{name: "SIGINT with a cluster partitioned", scenario: "cluster", drive: after("fault applied", 0, os.Interrupt),
		check: func(t *testing.T, r *scenario.Result) {
			// The partition under way was healed before the drain, and
			// every node and network is gone (noLeftovers).
			m := r.Modes[0]
			if r.Nodes != 3 || len(m.Faults) != 1 || m.Faults[0].Error != "" || m.Faults[0].Sides == "" || !hasEvent(m, metrics.EvFaultCleared, "partition healed") {
				t.Errorf("nodes %d, faults %+v: not healed", r.Nodes, m.Faults)
			}
			if m.Verdict.Status != scenario.Inconclusive || m.Lost != 0 || m.Sent >= 3000 || m.ClassSum() != m.Sent {
				t.Errorf("verdict %s, lost %d, sent %d, classes %d", m.Verdict.Status, m.Lost, m.Sent, m.ClassSum())
			}
		}},
	{name: "SIGINT while draining", scenario: "whole", drive: after("draining", 0, os.Interrupt),
		check: func(t *testing.T, r *scenario.Result) {
			// The burst was whole: its expectations were checked, and held.
			if m := r.Modes[0]; m.Verdict.Status != scenario.Pass || m.Confirmed != 3000 {
				t.Errorf("mode verdict %+v, confirmed %d: want the whole burst judged, pass", m.Verdict, m.Confirmed)
			}
			if r.Verdict.Status != scenario.Inconclusive || !strings.Contains(strings.Join(r.Verdict.Reasons, "\n"), "interrupted before the run completed") {
				t.Errorf("run verdict %+v", r.Verdict)
			}
		}},
	{name: "SIGINT while writing the report", scenario: "whole", fifo: true,
		check: func(t *testing.T, r *scenario.Result) {
			if m := r.Modes[0]; m.Verdict.Status != scenario.Pass {
				t.Errorf("mode verdict %+v: every mode had finished", m.Verdict)
			}
			if want := "interrupted while the report was being written (every mode had finished)"; r.Verdict.Status != scenario.Inconclusive || strings.Join(r.Verdict.Reasons, "\n") != want {
				t.Errorf("run verdict %+v, want inconclusive: %q", r.Verdict, want)
			}
		}},
	{name: "SIGTERM mid-burst", drive: after("burst started", 400*time.Millisecond, syscall.SIGTERM), check: cutShort},
	{name: "SIGINT twice with the broker down", drive: after("fault applied", 0, os.Interrupt, os.Interrupt),
		check: func(t *testing.T, r *scenario.Result) {
			m := r.Modes[0]
			if !m.NotRun || modeReasons(t, r) != "cut short: interrupted twice, its ids were not reconciled" || !strings.HasPrefix(r.Error, "interrupted twice") {
				t.Errorf("mode not run %v, reasons %q, error %q", m.NotRun, modeReasons(t, r), r.Error)
			}
		}},
}

// noLeftovers checks that no container or network of the run is left.
func noLeftovers(t *testing.T, runID string) {
	t.Helper()
	cli, err := docker.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	f := filters.NewArgs(filters.Arg("label", docker.LabelRun+"="+runID))
	ctrs, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	nets, err := cli.NetworkList(context.Background(), network.ListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	if len(ctrs) != 0 || len(nets) != 0 {
		t.Errorf("run %s left %d containers and %d networks behind", runID, len(ctrs), len(nets))
	}
}

func TestInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker image")
	}
	dir := t.TempDir()
	bin := buildBinary(t) // cmd/cleanup_integration_test.go
	file := filepath.Join(dir, "interrupt.yaml")
	if err := os.WriteFile(file, []byte(interruptScenarios), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range interruptCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := cmp.Or(tc.scenario, "phases")
			args := []string{"run", name, "-f", file, "--out", t.TempDir(), "--image", testImage()}
			drive := tc.drive
			if tc.fifo {
				fifo := filepath.Join(t.TempDir(), "summary.fifo")
				if err := syscall.Mkfifo(fifo, 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--summary-file", fifo)
				// A reader is there (a pipe without one is refused), but the
				// pipe is full: the summary, appended last, waits for room,
				// holding the run in its writing phase while the signal lands.
				reader := fillPipe(t, fifo)
				drive = func(t *testing.T, p *runProc) {
					after("writing the report", 0, os.Interrupt)(t, p)
					time.Sleep(300 * time.Millisecond)
					go func() {
						_, _ = io.Copy(io.Discard, reader)
						reader.Close()
					}()
				}
			}
			p := startRunProc(t, bin, args...)
			drive(t, p)
			if code := p.wait(t, 2*time.Minute); code != ExitInterrupted {
				t.Fatalf("exit %d, want %d\n%s", code, ExitInterrupted, p.stderr())
			}
			path := p.resultPath(t)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := reports.Validate(data); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			var r scenario.Result
			if err := json.Unmarshal(data, &r); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), "report.md")); err != nil || !r.Interrupted {
				t.Fatalf("report.md: %v; interrupted %v", err, r.Interrupted)
			}
			noLeftovers(t, r.RunID)
			tc.check(t, &r)
			if slices.ContainsFunc(r.Modes, func(m scenario.ModeResult) bool { return !m.NotRun }) {
				assertCheckReproduces(t, filepath.Dir(path))
			}
		})
	}
}

// fillPipe opens the named pipe for reading, then fills it from a writer
// of its own until a write would block, and closes that writer. It returns
// the reader, not yet read: the next writer waits until it is.
func fillPipe(t *testing.T, fifo string) *os.File {
	t.Helper()
	reader, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(w)
	// Whole pages first, then single bytes into what room is left.
	for _, size := range []int{4096, 1} {
		block := make([]byte, size)
		for {
			_, err := syscall.Write(w, block)
			if err == syscall.EAGAIN {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return reader
}
